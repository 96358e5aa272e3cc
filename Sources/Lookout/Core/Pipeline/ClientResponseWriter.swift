import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutUpstream

/// How a response body is delimited toward an HTTP/1.x client (RFC 9112 §6). An HTTP/2 stream
/// carries every body in DATA frames and ignores the distinction.
package enum ClientFraming {
    case none, contentLength, chunked, untilClose
}

/// Where an exchange's response goes: an HTTP/1.x client connection, or one HTTP/2 stream. The
/// exchange decides what to send; the writer puts it in its protocol's form. Writes happen on the
/// exchange's loop; a writer that is backed up returns false from `writeBody`, and the exchange
/// hears `clientDidDrain` when it may go on.
package protocol ClientResponseWriter: AnyObject {
    /// An interim response (1xx, RFC 9110 §15.2).
    func writeInformational(status: Int, reasonPhrase: String, fields: HTTPFields)
    /// The final response head; `framing` says how the body that follows is delimited.
    func writeHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming)
    /// Body bytes; false asks the producer to wait for `clientDidDrain`.
    @discardableResult func writeBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The body is complete, with its trailer section (already stripped of hop-by-hop fields).
    func writeEnd(trailers: HTTPFields?)
    /// Lookout's own error response for `error` in place of a response head.
    func writeError(_ error: ProxyError, requestID: UInt64)
    /// The byte stream a protocol switch (101) continues on; nil where none can happen (HTTP/2).
    var switchableStream: ByteStream? { get }
}
