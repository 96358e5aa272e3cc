import LookoutHTTP
import LookoutModel

/// What the request's way upstream (`ClientRequest`) needs of its exchange: the head's framing,
/// the stages that watch the body (through `AttemptsOwner`), the holding stage, the upload pacing,
/// the body limit, the current attempt's task, and the connection to read more from. The
/// exchange implements it and passes itself to each call.
protocol RequestOwner: AttemptsOwner {
    var context: LoopContext { get }
    /// The client connection, asked for more input once the body can move again.
    var delegate: ExchangeDelegate { get }
    var environment: ExchangeEnvironment { get }
    /// The head as it goes upstream (its framing says whether a body follows).
    var head: RequestHead { get }
    /// The holding stage, which hears about the body it holds.
    var holding: StageHold { get }
    var finished: Bool { get }
    /// The shaping rule's upload pacer, when the host has one.
    var shaping: ExchangeShaping? { get }
    /// The attempts: the current one's task takes the body.
    var upstream: UpstreamAttempts<Self> { get }

    func fail(_ error: ProxyError)
}
