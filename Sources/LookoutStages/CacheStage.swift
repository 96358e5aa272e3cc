import Lookout
import HTTPTypes
import LookoutCache
import LookoutHTTP
import LookoutIO
import LookoutModel

/// The shared cache (RFC 9111, `cache.enabled`) for one exchange: the lookup before any attempt
/// (a stored answer, a collapsed miss that follows another exchange's fetch, `only-if-cached`'s
/// 504, or validators for the attempt), what becomes of the response (stored as it streams, a 304
/// merged into the stored answer, `Cache-Status`), and a stale answer when the origin fails
/// (RFC 5861 §4). After the redirects and retries, so it sees only responses that will be relayed.
final class CacheStage: ExchangeStage, @unchecked Sendable {  // confined to the exchange's loop queue
    private let shared: SharedCache
    /// This exchange is a background revalidation: a stored response is always validated.
    private let validatesAlways: Bool
    /// Whether any monitor wants the lifecycle records (they are not built otherwise).
    private let recordsWanted: Bool
    /// This exchange's lookup, validation and store, once the request head reached the stage.
    private var cache: ExchangeCache?
    /// The stored response's validators, for the first hop's request (RFC 9111 §4.3.1).
    private var validators: HTTPFields?
    /// The `Cache-Status` member of the response being relayed (RFC 9211).
    private var cacheStatus: String?

    private let handler: CachedResponseHandler

    /// `handler`: the per-host cache rules of the configuration the exchange started under (a
    /// reload brings new ones, the store stays); nil takes the store's own.
    init(shared: SharedCache, handler: CachedResponseHandler? = nil, validatesAlways: Bool, recordsWanted: Bool) {
        self.shared = shared
        self.handler = handler ?? shared.handler
        self.validatesAlways = validatesAlways
        self.recordsWanted = recordsWanted
    }

    var heldPhase: String { "stored_body" }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        // Read once: the facts are built for each read.
        let facts = exchange.facts
        let url = facts.url
        let cache = ExchangeCache(cache: shared, handler: handler, url: url, head: exchange.requestHead, hostKey: facts.route.origin.ruleKey,
                                  validatesAlways: validatesAlways, recordsWanted: recordsWanted)
        self.cache = cache
        let (lookup, record) = cache.lookUp(head: exchange.requestHead, hasUpgrade: facts.asksForUpgrade)
        exchange.emit(record)
        switch lookup {
        case .answer(let answer):
            if cache.wantsBackgroundRevalidation { exchange.revalidateInBackground() }
            return .answer(Self.answer(answer, url: url))
        case .gatewayTimeout:
            return .fail(.sessionUnavailable(reason: .notCached(url: url)))
        case .follow(let fill):
            return .answerLater(CollapsedAnswer(follower: FillFollower(fill: fill, head: exchange.requestHead), cache: cache,
                                                url: url))
        case .forward(let fields):
            validators = fields
            return .proceed
        }
    }

    func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext) {
        guard let validators, exchange.facts.isFirstHop else { return }
        // Validating a stored response (RFC 9111 §4.3.1): its validators replace the client's
        // own; the client's conditions are answered from the result.
        request.head.headerFields[.ifNoneMatch] = nil
        request.head.headerFields[.ifModifiedSince] = nil
        request.head.headerFields.append(contentsOf: validators)
    }

    func attemptStarts(exchange: StageContext) {
        cache?.attemptWillStart()
    }

    func attemptResponse(_ response: ResponseHead, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan? {
        guard let cache, exchange.facts.isFirstHop, response.status != 101 else { return nil }
        var fields = response.headerFields
        HopByHopHeaders.remove(from: &fields)
        // A close-delimited body under a Transfer-Encoding is relayed still coded.
        let transferCoded = response.framing == .untilClose && response.headerFields[.transferEncoding] != nil
        let (action, records) = cache.responseArrived(status: response.status, reasonPhrase: response.reasonPhrase,
                                                      fields: fields, framing: response.framing,
                                                      transferCoded: transferCoded)
        for record in records { post(record, to: exchange) }
        switch action {
        case .answer(let answer):
            return .answer(Self.answer(answer, url: exchange.facts.url))
        case .relay(let status):
            cacheStatus = status
            return nil
        }
    }

    func answerInstead(of error: ProxyError, exchange: StageContext) -> StageAnswer? {
        guard case .upstreamFailed = error, let cache, let (answer, record) = cache.attemptFailed() else { return nil }
        exchange.emit(record)
        return Self.answer(answer, url: exchange.facts.url)
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        if let cacheStatus {
            response.fields.appendField(HTTPField(name: .cacheStatus, value: cacheStatus))
            self.cacheStatus = nil
        }
        return .proceed
    }

    func responseBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        if let cache, let record = cache.relayed(bytes) { exchange.emit(record) }
    }

    func responseEnd(trailers: HTTPFields?, exchange: StageContext) {
        if let record = cache?.responseEnded() { exchange.emit(record) }
    }

    func exchangeEnd(_ exchange: StageContext) {
        guard let cache else { return }
        cache.abandon()
        exchange.record(.cache(cache.summary))
    }

    /// A stored response as an answer: its head, and its body read from the store.
    private static func answer(_ answer: StoredAnswer, url: String) -> StageAnswer {
        let body = answer.segments.isEmpty ? nil : StoredBodySender(object: answer.object, segments: answer.segments, url: url)
        return StageAnswer(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: answer.fields,
                           framing: .contentLength, body: body, phase: "stored_body")
    }

    private func post(_ record: any EventKind, to exchange: StageContext) {
        func post<Kind: EventKind>(_ kind: Kind) { exchange.emit(kind) }
        post(record)
    }
}

/// A collapsed miss's answer: the leader's response as it is stored (`FillFollower`).
private final class CollapsedAnswer: DeferredAnswer, @unchecked Sendable {  // confined to the exchange's loop queue
    private let follower: FillFollower
    private let cache: ExchangeCache
    private let url: String

    init(follower: FillFollower, cache: ExchangeCache, url: String) {
        self.follower = follower
        self.cache = cache
        self.url = url
    }

    var phase: String { "collapsed" }
    var failure: ProxyError { .sessionUnavailable(reason: .cacheReadFailed(url: url)) }

    func start(on loop: EventLoop, progress: @escaping @Sendable () -> Void) {
        follower.start(on: loop, notify: progress)
    }

    func advance(client: ClientResponseWriter, afterDrain: Bool, observe: (UnsafeRawBufferPointer) -> Void,
                 sendHead: (_ status: Int, _ reason: String, _ fields: inout HTTPFields, _ framing: ClientFraming) -> Bool)
        -> DeferredProgress {
        switch follower.advance(client: client, afterDrain: afterDrain, observe: observe, sendHead: sendHead) {
        case .waiting: return .waiting
        case .done: return .done
        case .failed: return .failed
        case .goUpstream: return .goUpstream
        }
    }

    func stop() { follower.stop() }

    func withdraw(exchange: StageContext) {
        exchange.emit(cache.followerGoesUpstream())
    }
}
