import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// One step between the client and the upstream: a header rule, a map, shaping, capture. An
/// exchange runs its stages in the order `StagePlan` writes down; each stage sees the points of
/// the exchange it cares about and keeps its own state (compare Alamofire's `RequestInterceptor`,
/// mitmproxy's addon hooks and Envoy's HTTP filters). Every point has a default that does nothing,
/// so a stage implements only its own.
///
/// Stages run on the exchange's loop (a stage with state is confined to that loop's queue) and never call back into the exchange on the stack that asked
/// them, except through `StageContext` methods that say they are safe there.
package protocol ExchangeStage: AnyObject, Sendable {
    /// The phase an operator sees while this stage holds the exchange (`/exchanges`).
    var heldPhase: String { get }

    /// Once per exchange, in stage order, before anything goes upstream: go on, answer, hold or fail.
    func requestHead(_ exchange: StageContext) -> StageVerdict

    /// An upstream attempt is about to send its request (a retry is an attempt too).
    func attemptStarts(exchange: StageContext)

    /// Every hop's request head (a retry or a followed redirect is a hop too), in stage order, after
    /// the hop-by-hop fields were removed and Host set: may change target and fields.
    func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext)

    /// Request body bytes as they go upstream (after any upload pacing).
    func requestBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext)
    /// The stage holds the request with `.holdWithBody`: here is the body it asked for — all of
    /// it (`complete`), or only the first bytes of one longer than the limit (which then goes
    /// upstream as it came, and cannot be replaced). The exchange stays held; the stage may
    /// `editRequest` and then `resume`.
    func requestBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext)
    /// The request body is complete.
    func requestEnd(exchange: StageContext)

    /// An attempt's final response head (hop-by-hop fields as received), in stage order, before the
    /// response stages see it: relay it (`.forward`, with a rewritten `Location`; the next stage is
    /// asked too), follow it, retry, answer instead, or refuse it. The first stage with another
    /// plan decides; nil is no opinion.
    func attemptResponse(_ response: ResponseHead, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan?

    /// An attempt failed before any of its response reached the client: retry, or nil to let the
    /// failure stand.
    func attemptFailed(_ error: ProxyError, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan?

    /// An upstream failure is about to end the exchange before any response went out: answer
    /// instead (a stale stored response, RFC 5861 §4), or nil.
    func answerInstead(of error: ProxyError, exchange: StageContext) -> StageAnswer?

    /// The final response head, in stage order, before the client gets it: change it, hold it or
    /// refuse it.
    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict

    /// Response body bytes on their way to the client, whoever produced them (the origin, the
    /// cache, a stage's answer).
    func responseBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext)
    /// The response body is complete; `trailers` are the origin's, as received (RFC 9110 §6.5).
    func responseEnd(trailers: HTTPFields?, exchange: StageContext)
    /// The stage holds the response head with `.holdWithBody`: its body, as for `requestBodyHeld`.
    func responseBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext)

    /// An operator looks at the exchange while it runs (`/exchanges`): what this stage has so far.
    func inFlight(_ snapshot: inout ExchangeSummary)

    /// The exchange is over, however it ended (or became a tunnel): close what is open and give
    /// this stage's part of the record (`StageContext.record`).
    func exchangeEnd(_ exchange: StageContext)
}

package extension ExchangeStage {
    var heldPhase: String { "held" }
    func requestHead(_ exchange: StageContext) -> StageVerdict { .proceed }
    func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext) {}
    func requestBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {}
    func requestEnd(exchange: StageContext) {}
    func requestBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {}
    func responseBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {}
    func attemptStarts(exchange: StageContext) {}
    func attemptResponse(_ response: ResponseHead, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan? {
        nil
    }
    func attemptFailed(_ error: ProxyError, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan? { nil }
    func answerInstead(of error: ProxyError, exchange: StageContext) -> StageAnswer? { nil }
    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict { .proceed }
    func responseBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {}
    func responseEnd(trailers: HTTPFields?, exchange: StageContext) {}
    func inFlight(_ snapshot: inout ExchangeSummary) {}
    func exchangeEnd(_ exchange: StageContext) {}
}

/// What a stage decides at the request head.
package enum StageVerdict: Sendable {
    /// The next stage (or, after the last, the cache and the upstream) goes on.
    case proceed
    /// The stage answers: the stages after it and the upstream are skipped.
    case answer(StageAnswer)
    /// The stage answers with a response whose head comes later; the exchange may still go
    /// upstream if it withdraws.
    case answerLater(any DeferredAnswer)
    /// The exchange waits until the stage calls `StageContext.resume`; with a deadline (seconds),
    /// it ends with `stage_hold_timed_out` if none came by then. Nothing goes upstream meanwhile,
    /// and the client's body is read only into the exchange's bounded buffer.
    case hold(deadline: Double?)
    /// As `hold`, and the client's body is read meanwhile, up to `limit` bytes, for the stage to
    /// see and change (`ExchangeStage.requestBodyHeld`, `StageContext.editRequest`). A body
    /// announced longer than `limit` is not read: the stage hears at once that it is incomplete.
    case holdWithBody(limit: Int, deadline: Double?)
    /// The exchange ends with this error (an error response if nothing was sent yet).
    case fail(ProxyError)
}

/// What a stage decides at the response head.
package enum ResponseVerdict: Sendable {
    case proceed
    /// The response is not relayed: the client gets this error instead.
    case fail(ProxyError)
    /// The client gets nothing until the stage calls `StageContext.resume` (`.proceed` lets the
    /// response go on, `.answer` replaces it, `.fail` refuses it); with a deadline (seconds), it
    /// ends with `stage_hold_timed_out` if none came by then. Reading from the origin stops at the
    /// first body bytes. Two heads cannot wait: a `101` (the connection becomes a tunnel at once),
    /// and a response served to a collapsed cache miss (that exchange fetches for itself instead,
    /// and the stage sees the response it gets).
    case hold(deadline: Double?)
    /// As `hold`, and the origin's body is read meanwhile, up to `limit` bytes, for the stage to
    /// see and change (`ExchangeStage.responseBodyHeld`, `StageContext.editResponse`). An
    /// answer's body (a stored response, a file) is not read: only its head can be changed.
    case holdWithBody(limit: Int, deadline: Double?)
}

/// A response a stage gives in place of the upstream's.
package struct StageAnswer: Sendable {
    var status: Int
    var reasonPhrase: String
    var fields: HTTPFields
    /// How the body is delimited toward the client (`.none` for a bodiless answer).
    var framing: ClientFraming
    /// Produces the body while the client keeps up; nil for no body.
    var body: (any ResponseBodySource)?
    /// What an operator sees while the body is sent; the answering stage's `heldPhase` if nil.
    var phase: String?

    package init(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming,
         body: (any ResponseBodySource)?, phase: String? = nil) {
        self.status = status
        self.reasonPhrase = reasonPhrase
        self.fields = fields
        self.framing = framing
        self.body = body
        self.phase = phase
    }
}

/// One hop's request head as the stages shape it, and what the header rule changed (its record).
package struct UpstreamAdaptation {
    package var head: UpstreamRequestHead
    /// The origin this hop goes to.
    package let origin: Origin
    /// The header rule that changed the request, and how (for `request.didAdaptRequest`).
    package var rule: String?
    package var changes = HeaderChanges()
}

/// A final response head as the stages see it on its way to the client.
package struct StageResponseHead {
    package let status: Int
    let reasonPhrase: String
    package var fields: HTTPFields
    /// The origin the response came from (a stage's answer names the first hop's).
    package let origin: Origin
}
