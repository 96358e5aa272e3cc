import HTTPTypes
import LookoutHTTP
import LookoutModel

/// What one stream of an origin's HTTP/2 connection tells the task that opened it. Calls come
/// from the connection's reads and timer on the loop, never from inside the task's own calls.
package protocol HTTP2UpstreamStreamDelegate: AnyObject {
    /// An interim response (1xx).
    func streamDidReceiveInformational(_ head: ResponseHead)
    /// The final response head.
    func streamDidReceiveResponse(_ head: consuming ResponseHead)
    /// Response body bytes. Returns whether they were passed on: false keeps them on the
    /// stream's window (the origin may send no more than the window) until the task consumes them.
    func streamDidReceiveData(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The response is complete (END_STREAM), with its trailers if any.
    func streamDidFinish(trailers: HTTPFields?)
    /// The stream ended without a complete response.
    func streamDidFail(_ error: ProxyError)
    /// The request body queued on the stream went out far enough to take more.
    func streamCanTakeMoreBody()
    /// The connection's clock: time to check the first-byte and idle limits.
    func streamTimerTick(at now: Instant)
}
