import HTTPTypes
import LookoutModel

/// A final response head a stage holds (`ResponseVerdict.hold`), and what arrived behind it while
/// it was held: the exchange keeps it here and sends nothing to the client until the stage lets go.
final class HeldResponse: @unchecked Sendable {  // confined to the exchange's loop queue; a class, so the hot path's nil check is a pointer test
    var status: Int
    var reasonPhrase: String
    var fields: HTTPFields
    var framing: ClientFraming
    /// The stage after the holding one: where the response stages go on.
    var nextStage: Int
    /// Where the body comes from once the head is let go.
    enum Source {
        /// The origin: the task stopped reading at the first body bytes, kept in `body`.
        case upstream
        /// An answer's body, with the phase an operator sees while it is sent.
        case answer((any ResponseBodySource)?, phase: String)
    }
    var source: Source
    /// Body bytes from the origin that arrived while held: at most one read (HTTP/1.1) or what
    /// the stream's window allowed (HTTP/2), since the task stops reading at the first.
    var body: [UInt8] = []
    /// The origin's response ended while held, with these trailers.
    var ended = false
    var trailers: HTTPFields?
    /// `ResponseVerdict.holdWithBody`: the origin is read on while the body is at most this long.
    var bodyLimit: Int?
    /// The holding stage was told about the body (`responseBodyHeld`).
    var bodyReported = false

    init(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming, nextStage: Int, source: Source) {
        self.status = status
        self.reasonPhrase = reasonPhrase
        self.fields = fields
        self.framing = framing
        self.nextStage = nextStage
        self.source = source
    }
}

/// What the response stages decided about a head.
enum ResponseStagesOutcome {
    case proceed
    case fail(ProxyError)
    /// The stage at `index` holds it (reading up to `bodyLimit` bytes of its body, when set).
    case hold(index: Int, deadline: Double?, bodyLimit: Int?)
}
