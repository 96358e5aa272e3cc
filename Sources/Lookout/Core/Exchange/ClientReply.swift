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
}

/// The producer of a response body that is not the origin's.
enum AnswerProducer {
    /// An answer's body (a stage's, or a stored response), and what an operator sees meanwhile.
    case body(any ResponseBodySource, phase: String)
    /// An answer whose head comes later (`StageVerdict.answerLater`, a collapsed cache miss).
    case deferred(any DeferredAnswer)
}
