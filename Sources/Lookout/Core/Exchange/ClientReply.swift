import HTTPTypes
import LookoutHTTP

/// The response's way to the client: whether its head went out, how its body is delimited, whether
/// the connection stays open after it, and who produces the body when the origin does not.
struct ClientReply {
    /// The head went to the client: a failure now breaks the response off instead of replacing it.
    var headSent = false
    /// How the body is delimited toward the client (RFC 9112 §6.3).
    var framing = ClientFraming.none
    /// The client connection stays open after this response.
    var keepAlive = true
    /// The protocol the origin's 101 named.
    var acceptedUpgrade: String?
    /// Who produces the body while the client keeps up, when it is not the origin.
    var producer: AnswerProducer?

    /// How `response`'s body goes to a client speaking `clientVersion`. `transferCoding` is the
    /// `Transfer-Encoding` the response goes on with, from the origin's own fields: for a chunked
    /// one, read only when the client takes chunks; for a close-delimited one whose codings
    /// Lookout does not decode, only for an HTTP/1.1 client (RFC 9112 §6.3).
    static func framing(for response: ResponseHead, clientVersion: HTTPVersion, transferCoding: String?,
                        fields: inout HTTPFields) -> ClientFraming {
        switch response.framing {
        case .none:
            return .none
        case .contentLength(let length):
            // An empty body is no body: an HTTP/2 client gets END_STREAM on the HEADERS frame,
            // which is how a gRPC "Trailers-Only" answer must arrive.
            if response.contentLengthIsList { fields[.contentLength] = String(length) }
            return length == 0 ? .none : .contentLength
        case .chunked where clientVersion != .http1_0:
            fields[.transferEncoding] = transferCoding ?? "chunked"
            return .chunked
        case .untilClose:
            if let transferCoding { fields[.transferEncoding] = transferCoding }
            return .untilClose
        case .chunked:
            // An HTTP/1.0 client cannot take chunks.
            return .untilClose
        }
    }
}

/// The producer of a response body that is not the origin's.
enum AnswerProducer {
    /// An answer's body (a stage's, or a stored response), and what an operator sees meanwhile.
    case body(any ResponseBodySource, phase: String)
    /// An answer whose head comes later (`StageVerdict.answerLater`, a collapsed cache miss).
    case deferred(any DeferredAnswer)
}
