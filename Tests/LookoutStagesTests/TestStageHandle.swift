import Foundation
import HTTPTypes
@testable import Lookout
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// The handle a stage sees, implemented for tests: it keeps what the stage did (records, events,
/// resumes, edits, reroutes, attached values) and answers with what the test set. No socket is
/// opened and no loop runs; the loop in the facts only gives stages that schedule a timer
/// somewhere to put it.
final class TestStageHandle: StageContext, @unchecked Sendable {  // used by one test at a time, on its thread
    static let loops = EventLoopGroup(count: 1)

    var requestHead: RequestHead
    var heldResponse: (status: Int, fields: HTTPFields)?
    var route: StageRoute
    var url: String
    var clientAddress = "127.0.0.1:50000"
    var kind = ExchangeSummary.Kind.http
    var isFirstHop = true
    var requestSentAt: Instant?
    var upstreamTLS: UpstreamTLSDetails?
    let startedAt = Instant.now()

    private(set) var records: [StageRecord] = []
    private(set) var events: [any EventKind] = []
    private(set) var resumes: [StageVerdict] = []
    private(set) var requestEdits: [ExchangeEdits] = []
    private(set) var responseEdits: [ExchangeEdits] = []
    private(set) var reroutes: [(route: StageRoute, hostField: String?)] = []
    private(set) var shapings: [ExchangeShaping] = []
    private(set) var attached: [(value: any ExchangeStage, replacing: any ExchangeStage)] = []
    private(set) var revalidations = 0
    /// What `editRequest`/`editResponse` answer (nil: applied).
    var editProblem: String?

    /// A handle for `method url` with `fields`, the route taken from the URL.
    init(_ method: HTTPRequest.Method = .get, _ url: String, fields: HTTPFields = [:], framing: BodyFraming = .none) {
        guard case .absolute(let scheme, let host, let port, let path)? = RequestTarget.parseAbsolute(url) else {
            preconditionFailure("an absolute URL: \(url)")
        }
        let secure = scheme == "https"
        let origin = Origin(host: host, port: port ?? (secure ? 443 : 80), isSecure: secure)
        var headerFields = fields
        if headerFields[.host] == nil { headerFields[.host] = origin.hostFieldValue }
        requestHead = RequestHead(method: method, rawTarget: url, target: .absolute(scheme: scheme, host: host, port: port, path: path),
                                  version: .http1_1, headerFields: headerFields, framing: framing, keepAlive: true,
                                  expectsContinue: false, upgrade: nil, headLength: 0)
        route = StageRoute(origin: origin, path: path, url: url)
        self.url = url
    }

    var facts: ExchangeFacts {
        ExchangeFacts(requestID: 7, connectionID: 3, clientAddress: clientAddress, clientKey: HostRuleKey(route.origin.host),
                      kind: kind, httpVersion: "HTTP/1.1", startedAt: startedAt, loop: Self.loops.loops[0], url: url,
                      route: route, isFirstHop: isFirstHop, asksForUpgrade: false, modified: false,
                      requestSentAt: requestSentAt, upstreamTLS: upstreamTLS)
    }

    func editRequest(_ edits: ExchangeEdits) -> String? {
        requestEdits.append(edits)
        return editProblem
    }

    func editResponse(_ edits: ExchangeEdits) -> String? {
        responseEdits.append(edits)
        return editProblem
    }

    func resume(_ verdict: StageVerdict, from stage: ExchangeStage) {
        resumeLock.withLock { resumes.append(verdict) }
    }

    /// Resumes come from timers on the loop too: read them through these.
    private let resumeLock = NSLock()
    var resumeCount: Int { resumeLock.withLock { resumes.count } }
    var firstResume: StageVerdict? { resumeLock.withLock { resumes.first } }

    func record(_ part: StageRecord) {
        records.append(part)
    }

    func emit<Kind: EventKind>(_ make: @autoclosure () -> Kind, for attempt: AttemptFacts?) {
        events.append(make())
    }

    func reroute(to route: StageRoute, hostField: String?) {
        reroutes.append((route, hostField))
        self.route = route
    }

    func shape(with rule: ShapingRule) -> ExchangeShaping {
        let shaping = ExchangeShaping(rule: rule)
        shapings.append(shaping)
        return shaping
    }

    func attach(_ value: any ExchangeStage, replacing stage: any ExchangeStage) {
        attached.append((value, stage))
    }

    func revalidateInBackground() {
        revalidations += 1
    }

    /// The names of the events the stage posted, in order.
    var eventNames: [String] { events.map { type(of: $0).name } }

    /// The summary the records would make.
    var summary: ExchangeSummary {
        var summary = ExchangeSummary(requestID: 7, connectionID: 3, clientAddress: clientAddress, kind: kind,
                                      method: requestHead.method.rawValue, url: url, httpVersion: "HTTP/1.1", start: startedAt)
        for part in records { summary.apply(part) }
        return summary
    }

    /// An upstream hop's request as the core makes it before the stages see it.
    func adaptation() -> UpstreamAdaptation {
        UpstreamAdaptation(head: UpstreamRequestHead(method: requestHead.method, target: route.path,
                                                     authority: route.origin.authority, headerFields: requestHead.headerFields),
                           origin: route.origin)
    }

    /// A final response head from the route's origin.
    func response(_ status: Int, _ fields: HTTPFields = [:]) -> StageResponseHead {
        StageResponseHead(status: status, reasonPhrase: ReasonPhrase.standard(for: status), fields: fields, origin: route.origin)
    }

    /// The facts of this exchange's `number`th attempt.
    func attempt(_ number: Int = 1, reused: Bool = false, receivedResponseBytes: Bool = false) -> AttemptFacts {
        AttemptFacts(number: number, taskID: UInt64(number), usedReusedConnection: reused,
                     receivedResponseBytes: receivedResponseBytes, method: requestHead.method, url: route.url,
                     host: route.origin.host, hasBody: requestHead.framing != .none, bodyIsReplayable: true,
                     redirectsFollowed: isFirstHop ? 0 : 1, visitedURLs: [], retriesByRule: number - 1,
                     responseReachedClient: false)
    }
}
