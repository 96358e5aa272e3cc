import HTTPTypes
import LookoutHTTP
import LookoutIO
import Logging
import LookoutModel
import LookoutUpstream

/// Receives one event loop's upstream events that belong to no single attempt — resolving,
/// connecting, reusing, trust, tunnels, an origin's HTTP/2 connection — and tells the monitors.
/// Nothing below it knows about events. An attempt's own reports go to its exchange
/// (`UpstreamTaskDelegate`), not here.
final class SessionDelegate: UpstreamEvents, @unchecked Sendable {  // immutable; called on one loop's queue
    let monitor: CompositeEventMonitor
    let logger: Logger

    init(monitor: CompositeEventMonitor, logger: Logger) {
        self.monitor = monitor
        self.logger = logger
    }

    /// Posts an event, building it only if some monitor wants its kind.
    @inline(__always) func emit<Kind: EventKind>(_ context: @autoclosure () -> EventContext, _ make: @autoclosure () -> Kind) {
        if monitor.wants(Kind.interest) { monitor.post(LookoutEvent(context(), make())) }
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
