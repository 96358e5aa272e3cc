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

/// What the upstream side reports, the one boundary from a task, an opener or an origin's HTTP/2
/// connection back to the session. Called on the loop the task runs on; the session's side tells
/// the monitors first, then the policies, then the exchange.
package protocol UpstreamTaskDelegate: AnyObject, Sendable {
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
