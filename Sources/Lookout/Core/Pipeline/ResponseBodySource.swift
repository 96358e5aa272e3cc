import LookoutModel
import LookoutUpstream
/// A body an answer sends in place of an upstream's (a map-local file, a stored response): read
/// in pieces while the client keeps up, never held whole. The exchange calls `send` again when
/// the client drains.
package protocol ResponseBodySource: AnyObject, Sendable {
    /// `observe` sees every byte written (the stages' `responseBody`).
    func send(to client: ClientResponseWriter, observe: (UnsafeRawBufferPointer) -> Void) -> BodyProgress
    /// Why the exchange breaks off when `send` returns `.failed`.
    var failure: ProxyError { get }
}

package enum BodyProgress { case done, waiting, failed }
