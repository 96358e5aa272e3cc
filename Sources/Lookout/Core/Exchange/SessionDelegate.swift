import HTTPTypes
import LookoutHTTP
import LookoutIO
import Logging
import LookoutModel
import LookoutUpstream

/// Receives every upstream transport callback of one event loop — tasks' and tunnels' — tells the
/// monitors first, then the exchange (whose stages decide about redirects, retries and the cache),
/// which it finds through the loop's `RequestTaskMap` (the state provider). Nothing below it knows
/// about events. One per loop, so that the map it reads is that loop's.
final class SessionDelegate: UpstreamTaskDelegate, @unchecked Sendable {  // immutable; methods run on `taskMap`'s loop queue
    let monitor: CompositeEventMonitor
    let logger: Logger
    /// The loop's exchanges and their current tasks.
    let taskMap: RequestTaskMap<Exchange, UpstreamTask>

    init(monitor: CompositeEventMonitor, logger: Logger, taskMap: RequestTaskMap<Exchange, UpstreamTask>) {
        self.monitor = monitor
        self.logger = logger
        self.taskMap = taskMap
    }

    /// Posts an event, building it only if some monitor wants its kind.
    @inline(__always) func emit<Kind: EventKind>(_ context: @autoclosure () -> EventContext, _ make: @autoclosure () -> Kind) {
        if monitor.wants(Kind.interest) { monitor.post(LookoutEvent(context(), make())) }
    }

    private func exchange(for task: UpstreamTask) -> Exchange {
        guard let exchange = taskMap.request(forTask: task.id) else {
            preconditionFailure("task \(task.id) reported after leaving the request-task map")
        }
        return exchange
    }

    private func context(_ task: UpstreamTask) -> EventContext {
        EventContext(connectionID: task.connectionID, requestID: task.requestID, taskID: task.id)
    }

    // MARK: - Connecting (tasks and tunnels)

    // The contexts are autoclosures: building one reads the clock, which only a monitor needs.

    func upstream(_ context: @autoclosure () -> EventContext, didCreateFor origin: Origin, attempt: Int) {
        emit(context(), TaskDidCreate(origin: origin.authority, attempt: attempt))
    }

    func upstream(_ context: @autoclosure () -> EventContext, didResolve resolution: Resolution, host: String,
                  milliseconds: Double) {
        emit(context(), TaskDidResolve(host: host, addresses: resolution.addresses.map(\.ipText),
                                     milliseconds: milliseconds, cached: resolution.fromCache))
    }

    func upstream(_ context: @autoclosure () -> EventContext, didConnect connection: ByteStream, milliseconds: Double) {
        emit(context(), TaskDidConnect(address: connection.peerAddress?.description ?? "", milliseconds: milliseconds))
    }

    func upstream(_ context: @autoclosure () -> EventContext, didReuse connection: ByteStream) {
        emit(context(), TaskDidReuseConnection(address: connection.peerAddress?.description ?? "",
                                             upstreamConnectionID: connection.id))
    }

    // MARK: - Trust

    func task(_ task: UpstreamTask, didReceiveChallengeFor host: String, rule: String, evaluator: String) {
        emit(context(task), TaskDidReceiveChallenge(host: host, rule: rule, evaluator: evaluator))
    }

    func task(_ task: UpstreamTask, didEvaluateServerTrust decision: TrustDecision) {
        emit(context(task), TaskDidEvaluateServerTrust(decision: decision))
        if decision.evaluator.contains("disabled") {
            logger.warning("trust evaluation is disabled for \(decision.host) (rule \(decision.rule)): any certificate is accepted")
        }
        if decision.outcome != .passed {
            let level: Logger.Level = decision.outcome == .failed ? .warning : .notice
            logger.log(level: level, "trust rule \(decision.rule) \(decision.outcome == .failed ? "refused" : "reported") \(decision.host): \(decision.reason ?? "") \(decision.message ?? "")")
        }
    }

    // MARK: - Request

    func taskIsReadyForBody(_ task: UpstreamTask) {
        exchange(for: task).taskIsReadyForBody()
    }

    func task(_ task: UpstreamTask, didSendBodyData bytes: Int) {
        emit(context(task), TaskDidSendBodyData(bytesSent: bytes, totalBytesSent: task.metrics.requestBodyBytes))
    }

    func taskDidDrainRequestBody(_ task: UpstreamTask) {
        exchange(for: task).taskDidDrainRequestBody()
    }

    // MARK: - Response

    func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead) {
        emit(context(task), TaskDidReceiveResponse(status: head.status, reasonPhrase: head.reasonPhrase,
                                                   headerFields: head.headerFields))
        exchange(for: task).taskDidReceiveInformational(head)
    }

    /// Monitors, then the exchange, whose stages decide what becomes of the response (relayed,
    /// followed, retried, refused). `head` is the exchange's to keep: handed on, not copied, so the
    /// exchange can add its own fields without copying the origin's (copy-on-write, two owners).
    func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead) -> ResponseDisposition {
        let exchange = exchange(for: task)
        emit(context(task), TaskDidReceiveResponse(status: head.status, reasonPhrase: head.reasonPhrase,
                                                   headerFields: head.headerFields))
        // The exchange may hold the response back (another attempt, or the cache answers instead).
        return exchange.taskDidReceiveResponse(consume head, task: task) ? .allow : .abandon
    }

    /// Returns false when the client is backed up.
    func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64) -> Bool {
        emit(context(task), TaskDidReceiveData(bytes: bytes.count, totalBytes: total))
        return exchange(for: task).taskDidReceiveData(bytes)
    }

    func task(_ task: UpstreamTask, didFinishResponseWith trailers: HTTPFields?) {
        exchange(for: task).taskDidFinishResponse(trailers: trailers)
    }

    func taskDidSuspend(_ task: UpstreamTask) {
        emit(context(task), TaskDidSuspend())
    }

    func taskDidResume(_ task: UpstreamTask) {
        emit(context(task), TaskDidResume())
    }

    // MARK: - Completion

    /// Metrics first, then completion (the map forgets the task only after both), then — unless
    /// the exchange itself stopped the task — the retry policy and the exchange.
    /// `metrics` is the exchange's to keep (handed on, not copied again: it holds a dozen strings).
    func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: consuming TransactionMetrics,
              notifyExchange: Bool) {
        let map = taskMap
        let exchange = exchange(for: task)
        emit(context(task), TaskDidGatherMetrics(metrics: exchange.metrics(adding: metrics)))
        map.disassociateIfNecessaryAfterGatheringMetrics(task)
        emit(context(task), TaskDidComplete(error: error))
        map.disassociateIfNecessaryAfterCompleting(task)
        guard notifyExchange else { return }
        exchange.taskDidComplete(task, metrics: consume metrics, error: error)
    }

    // MARK: - Tunnels

    func tunnel(_ context: @autoclosure () -> EventContext, didOpenTo target: String, address: String) {
        emit(context(), TunnelDidOpen(target: target, address: address))
    }

    func tunnel(_ context: EventContext, didCloseAfter milliseconds: Double, clientToUpstream: UInt64,
                upstreamToClient: UInt64, error: ProxyError?, completesTask: Bool) {
        emit(context, TunnelDidClose(clientToUpstream: clientToUpstream, upstreamToClient: upstreamToClient,
                                     milliseconds: milliseconds, error: error))
        // A switched exchange's upstream task completed at the 101; a CONNECT's ends with its tunnel.
        if completesTask { emit(context, TaskDidComplete(error: error)) }
    }
}
