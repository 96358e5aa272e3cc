import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel

/// What a task does with a final response head: go on relaying it, or stop because the exchange
/// holds it back (a retry or a followed redirect comes next, or a refusal is answered instead).
package enum ResponseDisposition {
    case allow
    case abandon
}

/// What the upstream side reports that is not one attempt's: resolving, connecting, reusing,
/// trust, and an origin's HTTP/2 connection's own events. One per event loop (the session's), for
/// openers, tasks and tunnels alike: it tells the monitors.
package protocol UpstreamEvents: AnyObject, Sendable {
    /// Posts an event, building it only if some monitor wants its kind.
    func emit<Kind: EventKind>(_ context: @autoclosure () -> EventContext, _ make: @autoclosure () -> Kind)

    // Connecting (tasks and tunnels).
    func upstream(_ context: @autoclosure () -> EventContext, didResolve resolution: Resolution, host: String,
                  milliseconds: Double)
    func upstream(_ context: @autoclosure () -> EventContext, didConnect connection: ByteStream, milliseconds: Double)
    func upstream(_ context: @autoclosure () -> EventContext, didReuse connection: ByteStream)

    // Trust.
    func task(_ task: UpstreamTask, didReceiveChallengeFor host: String, rule: String, evaluator: String)
    func task(_ task: UpstreamTask, didEvaluateServerTrust decision: TrustDecision)
}

/// What one upstream attempt reports to the one that started it (its exchange): the request's
/// progress, the response, and the end. Called on the loop the task runs on, never on the stack of
/// a call the exchange made into the task. The task holds its delegate until it has reported its
/// completion, so no callback can reach an exchange that is gone.
package protocol UpstreamTaskDelegate: AnyObject, Sendable {
    // The request.
    func taskIsReadyForBody(_ task: UpstreamTask)
    func task(_ task: UpstreamTask, didSendBodyData bytes: Int)
    func taskDidDrainRequestBody(_ task: UpstreamTask)

    // The response.
    func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead)
    /// `head` is the receiver's to keep (handed on, not copied).
    func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead) -> ResponseDisposition
    /// False when the client is backed up: the task stops reading until `resumeReading`.
    func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64) -> Bool
    func task(_ task: UpstreamTask, didFinishResponseWith trailers: HTTPFields?)
    func taskDidSuspend(_ task: UpstreamTask)
    func taskDidResume(_ task: UpstreamTask)

    /// The attempt is over: metrics, then completion; `notifyExchange` is false when the exchange
    /// itself stopped the task. `metrics` is the receiver's to keep.
    func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: consuming TransactionMetrics,
              notifyExchange: Bool)
}
