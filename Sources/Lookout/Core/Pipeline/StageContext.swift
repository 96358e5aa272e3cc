import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What a stage may see and do of its exchange: the one boundary from a stage back to the
/// exchange. The exchange implements it; tests implement it too (a stage needs no socket and no
/// loop to be driven). Twelve members: the heads, the facts, edit, resume, record and emit, and
/// the five things particular stages do to an exchange (send it elsewhere, shape it, take a
/// stage's place with a per-exchange value, revalidate in the background). Answering, holding and
/// failing are verdicts a stage returns, not calls.
package protocol StageContext: AnyObject, Sendable {
    /// The request head as it will go upstream so far: the client's, with a holding stage's edits.
    var requestHead: RequestHead { get }
    /// The response head a stage holds now, if one does.
    var heldResponse: (status: Int, fields: HTTPFields)? { get }
    /// What is known of the exchange now: ids, client, route, the current attempt.
    var facts: ExchangeFacts { get }

    /// Changes the request a stage holds (`hold`, `holdWithBody`) before it goes upstream. Nil
    /// when done; otherwise what cannot be applied, naming the field (nothing was changed).
    func editRequest(_ edits: ExchangeEdits) -> String?
    /// Changes the response head (and a complete held body) a stage holds; as `editRequest`.
    func editResponse(_ edits: ExchangeEdits) -> String?
    /// Ends a hold (of the request head or of the response head): `verdict` takes effect on a
    /// later turn of the loop, never on the caller's stack. Ignored unless `stage` holds the
    /// exchange now.
    func resume(_ verdict: StageVerdict, from stage: ExchangeStage)

    /// Adds a stage's part to the exchange's record (`StageRecord`); the exchange writes it.
    func record(_ part: StageRecord)
    /// Posts a record of this exchange (of one of its attempts, naming its task, when `attempt`
    /// is given), built only if a monitor wants its kind.
    func emit<Kind: EventKind>(_ make: @autoclosure () -> Kind, for attempt: AttemptFacts?)

    /// Sends the request to another origin (map remote). `hostField` keeps the client's Host.
    func reroute(to route: StageRoute, hostField: String?)
    /// Applies a shaping rule to the exchange: its pacing and cuts on both directions
    /// (`ExchangeShaping`, shared with `CONNECT` tunnels).
    func shape(with rule: ShapingRule) -> ExchangeShaping
    /// A stage's value for this exchange takes the place of `stage` (a shared stage) in this
    /// exchange's list, from the next point on: per-exchange state is made only for an exchange
    /// a stage applies to.
    func attach(_ value: any ExchangeStage, replacing stage: any ExchangeStage)
    /// Starts a revalidation nobody waits for (RFC 5861 §3): the stale answer was served, and the
    /// store is to be fresh for the next request.
    func revalidateInBackground()
}

package extension StageContext {
    /// Posts a record of this exchange, built only if a monitor wants its kind.
    func emit<Kind: EventKind>(_ make: @autoclosure () -> Kind) {
        emit(make(), for: nil)
    }
}

/// Where an exchange's request goes.
package struct StageRoute {
    package var origin: Origin
    /// Origin-form target of the first hop.
    package var path: String
    package var url: String

    package init(origin: Origin, path: String, url: String) {
        self.origin = origin
        self.path = path
        self.url = url
    }
}
