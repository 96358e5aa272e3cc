import HTTPTypes
import LookoutModel
import LookoutUpstream

/// What an exchange's response (`ClientResponse`) needs of its exchange: the stages and the
/// record (through `AttemptsOwner`), what a stage holds, the request's state, and the ends of
/// the exchange. The exchange implements it and passes itself to each call.
protocol ResponseOwner: AttemptsOwner {
    var id: UInt64 { get }
    var context: LoopContext { get }
    /// The client connection: whether it closes after this exchange.
    var delegate: ExchangeDelegate { get }
    var environment: ExchangeEnvironment { get }
    /// What a stage holds now (the response head, with its body when asked).
    var holding: StageHold { get set }
    var finished: Bool { get }
    /// The shaping rule's writers and record, when the host has one.
    var shaping: ExchangeShaping? { get }
    /// The whole request was read.
    var requestEnded: Bool { get }
    /// The attempts: the one whose response is relayed, and where it came from.
    var upstream: UpstreamAttempts<Self> { get }

    /// A stage holds the exchange (with a deadline).
    func hold(by stage: any ExchangeStage, deadline: Double?)
    func finish(error: ProxyError?, keepAlive: Bool, truncate: Bool)
    func fail(_ error: ProxyError)
    /// Nothing goes upstream any more: the client's body is dropped.
    func dropRequestBody()
    /// Body bytes on their way to the client, and the body's end, for the stages that watch them.
    func responseBodyPassed(_ bytes: UnsafeRawBufferPointer)
    func responseBodyEnded(trailers: HTTPFields?)
}
