import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What a stage may see and do of its exchange: the one boundary from a stage back to the
/// exchange. The exchange implements it; tests implement it too.
protocol StageContext: AnyObject, Sendable {
    var requestID: UInt64 { get }
    /// The request head as the client sent it.
    var head: RequestHead { get }
    /// The host the client addressed, prepared for the per-host rule sets.
    var clientKey: HostRuleKey { get }
    /// Where the request goes now (a map remote rule changes it).
    var route: StageRoute { get }
    /// The host the current hop goes to (`route.origin.host`, without building the route).
    var upstreamHost: String { get }
    /// The URL the exchange's record names (the client's, or where a map rule sent it).
    var url: String { get }
    /// Adds a stage's part to the exchange's record (`StageRecord`); the exchange writes it.
    func record(_ part: StageRecord)
    /// The exchange's loop: stages that wait schedule their timers on it.
    var loop: EventLoop { get }

    /// Posts a record of this exchange, built only if a monitor wants its kind.
    func emit<Kind: EventKind>(_ make: @autoclosure () -> Kind)
    /// Posts a record of one attempt of this exchange (naming its task).
    func emit<Kind: EventKind>(_ make: @autoclosure () -> Kind, for attempt: AttemptFacts)
    /// Ends a hold (of the request head or of the response head): `verdict` takes effect on a
    /// later turn of the loop, never on the caller's stack. Ignored unless `stage` holds the
    /// exchange now.
    func resume(_ verdict: StageVerdict, from stage: ExchangeStage)
    /// Sends the request to another origin (map remote). `hostField` keeps the client's Host.
    func reroute(to route: StageRoute, hostField: String?)
    /// The request asks for a protocol switch that goes upstream (`Upgrade`, RFC 9110 §7.8).
    var asksForUpgrade: Bool { get }
    /// The request's first hop, as sent before any redirect was followed.
    var isFirstHop: Bool { get }
    /// Starts a revalidation nobody waits for (RFC 5861 §3): the stale answer was served, and the
    /// store is to be fresh for the next request.
    func revalidateInBackground()
    /// Nothing goes upstream any more: the client's body is read and dropped.
    func dropRequestBody()
    /// Applies a shaping rule to the exchange: its latency drawn, its pacing and cuts on both
    /// directions (`ExchangeShaping`, shared with `CONNECT` tunnels).
    func shape(with rule: ShapingRule) -> ExchangeShaping

    /// Where the client connected from.
    var clientAddress: String { get }
    /// The request head as it will go upstream so far (the client's, with edits applied).
    var currentRequest: RequestHead { get }
    /// The exchange for a filter of `lookout log`'s language (a breakpoint's, a hook's), with the
    /// response's status and fields at a response.
    func filterSubject(status: Int?, responseFields: HTTPFields?) -> ExchangeFilterSubject
    /// The response head a stage holds now, if one does.
    var heldResponseHead: (status: Int, fields: HTTPFields)? { get }
    /// Changes the request a stage holds (`hold`, `holdWithBody`) before it goes upstream. Nil
    /// when done; otherwise what cannot be applied, naming the field (nothing was changed).
    func editRequest(_ edits: ExchangeEdits) -> String?
    /// Changes the response head (and a complete held body) a stage holds; as `editRequest`.
    func editResponse(_ edits: ExchangeEdits) -> String?
    /// When the exchange began (records of it count their milliseconds from here).
    var startedAt: Instant { get }
    /// A stage's value for this exchange takes the place of `stage` (a shared stage) in this
    /// exchange's list, from the next point on: per-exchange state is made only for an exchange
    /// a stage applies to.
    func attach(_ value: any ExchangeStage, replacing stage: any ExchangeStage)
    /// When the current attempt finished sending the request, if it has.
    var requestSentAt: Instant? { get }
    /// The current attempt's upstream TLS, if it spoke TLS.
    var upstreamTLS: UpstreamTLSDetails? { get }
}

/// Where an exchange's request goes.
struct StageRoute {
    var origin: Origin
    /// Origin-form target of the first hop.
    var path: String
    var url: String
}
