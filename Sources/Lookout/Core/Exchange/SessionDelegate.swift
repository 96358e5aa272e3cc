import HTTPTypes
import LookoutHTTP
import LookoutIO
import Logging
import LookoutModel
import LookoutUpstream

/// What the exchange does with a final response head, as the policies decided.
enum ResponsePlan: Equatable {
    /// Relay it; `location` replaces the `Location` field when a redirect rule rewrote it.
    case forward(location: String?)
    /// Hold it back and request `url` next (a followed redirect with this status).
    case follow(url: String, status: Int)
    /// Hold it back and try again after `delay` seconds.
    case retry(delay: Double, countsAgainstRule: Bool)
    /// Hold it back and answer the client with this error.
    case fail(ProxyError)
}

/// Receives every upstream transport callback of one event loop — tasks' and tunnels' — tells the
/// monitors first, then asks the policies (redirect, retry, cache), then tells the exchange, which
/// it finds through the loop's `RequestTaskMap` (the state provider). Nothing below it knows about
/// events. One per loop, so that the map it reads is that loop's.
final class SessionDelegate: UpstreamTaskDelegate, @unchecked Sendable {  // immutable; methods run on `taskMap`'s loop queue
    let monitor: CompositeEventMonitor
    let logger: Logger
    let redirectHandler: RedirectHandler
    let retrier: RequestRetrier
    /// The loop's exchanges and their current tasks.
    let taskMap: RequestTaskMap<Exchange, UpstreamTask>

    init(monitor: CompositeEventMonitor, logger: Logger, redirectHandler: RedirectHandler, retrier: RequestRetrier,
         taskMap: RequestTaskMap<Exchange, UpstreamTask>) {
        self.monitor = monitor
        self.logger = logger
        self.redirectHandler = redirectHandler
        self.retrier = retrier
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

    /// Monitors, then the redirect and retry policies, then the exchange with the resulting plan.
    /// `head` is the exchange's to keep: handed on, not copied, so the exchange can add its own
    /// fields without copying the origin's (copy-on-write, two owners).
    func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead) -> ResponseDisposition {
        let exchange = exchange(for: task)
        emit(context(task), TaskDidReceiveResponse(status: head.status, reasonPhrase: head.reasonPhrase,
                                                   headerFields: head.headerFields))
        var plan = ResponsePlan.forward(location: nil)
        if RedirectStatus.isFollowable(head.status), let location = head.headerFields[.location] {
            let outcome = redirectHandler.outcome(for: exchange.redirectContext(status: head.status, location: location))
            emit(context(task), TaskWillPerformRedirect(from: task.request.url, to: outcome.target, status: head.status,
                                                        decision: outcome.decision.name, reason: outcome.reason))
            switch outcome.decision {
            case .follow(let url): plan = .follow(url: url, status: head.status)
            case .pass(let location): plan = .forward(location: location)
            case .refuse(let error): plan = .fail(error)
            }
        }
        if case .forward = plan, head.status == 407, let parent = task.origin.parent, !task.origin.isSecure,
           !exchange.clientSentProxyAuthorization {
            // The parent wants credentials the client never gave: Lookout's configuration is
            // missing them, and a 407 would make the client think Lookout asks.
            plan = .fail(.upstreamFailed(reason: .parentProxyFailed(
                proxy: parent.description,
                detail: "answered 407 (the parent wants credentials: give them in the upstream_proxies URL)")))
        }
        if case .forward = plan, retrier.mayRetry(status: head.status, host: task.origin.host),
           let retry = exchange.retryContext(
            for: task, outcome: .response(status: head.status, retryAfter: head.headerFields[.retryAfter])) {
            if case .retry(let delay, let reason, let counts) = retrier.decision(for: retry) {
                emit(EventContext(connectionID: task.connectionID, requestID: task.requestID),
                     RequestIsRetrying(attempt: task.attempt + 1, delay: delay, reason: reason))
                plan = .retry(delay: delay, countsAgainstRule: counts)
            }
        }
        // The exchange may also hold a forwarded response back (the cache answers instead).
        return exchange.taskDidReceiveResponse(consume head, plan: plan) ? .allow : .abandon
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
        var retry = RetryDecision.doNotRetry
        if let error, let context = exchange.retryContext(for: task, outcome: .failure(error)) {
            retry = retrier.decision(for: context)
            if case .retry(let delay, let reason, _) = retry {
                emit(EventContext(connectionID: task.connectionID, requestID: task.requestID),
                     RequestIsRetrying(attempt: task.attempt + 1, delay: delay, reason: reason))
            }
        }
        exchange.taskDidComplete(task, metrics: consume metrics, error: error, retry: retry)
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
