import HTTPTypes
import LookoutCache
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// The shared cache's part of an exchange (RFC 9111): after the stages, a stored answer, a
/// collapsed miss that follows another exchange's fetch, or validators for the upstream request.
extension Exchange {
    /// After the stages: the cache answers, or the first attempt goes upstream.
    func lookUpOrForward() {
        let origin = request.origin
        var validators: HTTPFields?
        if let shared = environment.cache {
            let cache = ExchangeCache(cache: shared, url: summary.url, head: head, hostKey: origin.ruleKey,
                                      validatesAlways: revalidatesInBackground,
                                      recordsWanted: environment.monitor.wants(.lifecycle))
            self.cache = cache
            let (lookup, record) = cache.lookUp(head: head, hasUpgrade: upgradeProtocol != nil)
            environment.emit(requestContext, record)
            switch lookup {
            case .answer(let answer):
                answerFromStore(answer)
                if cache.wantsBackgroundRevalidation {
                    BackgroundRevalidation.start(environment: environment, context: context, url: summary.url, origin: origin,
                                                 path: upstreamPath, requestFields: head.headerFields)
                }
                return
            case .gatewayTimeout:
                fail(.sessionUnavailable(reason: .notCached(url: summary.url)))
                return
            case .follow(let fill):
                let follower = FillFollower(fill: fill, head: head)
                self.follower = follower
                // Told on this exchange's loop (the fill posts there) whenever the leader moves on.
                follower.start(on: context.loop) { [weak self] in self?.advanceFollower(afterDrain: false) }
                advanceFollower(afterDrain: false)
                return
            case .forward(let fields):
                validators = fields
            }
        }
        request = makeUpstreamRequest(method: head.method, origin: origin, path: upstreamPath, url: summary.url,
                                      withBody: head.framing != .none, stripCredentials: false, validators: validators)
        startAttempt()
    }

    /// A collapsed miss: answer from the leader's fill as it grows, or fetch after all.
    func advanceFollower(afterDrain: Bool) {
        guard let follower, !finished else { return }
        var refusal: ProxyError?
        var fetchesItself = false
        let progress = follower.advance(client: client, afterDrain: afterDrain, observe: { [self] in responseBodyPassed($0) }) {
            status, reason, fields, framing in
            summary.status = status
            decideKeepAlive(possible: requestEnded && framing != .untilClose, fields: &fields)
            switch runResponseStages(status: status, reasonPhrase: reason, fields: &fields) {
            case .proceed:
                sendResponseHead(status: status, reasonPhrase: reason, fields: fields, framing: framing)
                return true
            case .fail(let error):
                refusal = error
            case .hold:
                // A follower's head cannot wait (the fill goes on for the others): this exchange
                // fetches for itself, and the stage sees the response it gets.
                fetchesItself = true
            }
            return false
        }
        switch progress {
        case .waiting:
            return
        case .done:
            self.follower = nil
            if let refusal {
                fail(refusal)
                return
            }
            if fetchesItself {
                fetchAfterAll()
                return
            }
            finish(error: nil, keepAlive: keepClientAlive)
        case .failed:
            self.follower = nil
            finish(error: .sessionUnavailable(reason: .cacheReadFailed(url: summary.url)), keepAlive: false,
                   truncate: responseHeadSent)
        case .goUpstream:
            self.follower = nil
            fetchAfterAll()
        }
    }

    /// A collapsed miss that could not be served from the leader's fill: fetch it upstream.
    private func fetchAfterAll() {
        if let cache { environment.emit(requestContext, cache.followerGoesUpstream()) }
        request = makeUpstreamRequest(method: head.method, origin: request.origin, path: upstreamPath, url: summary.url,
                                      withBody: false, stripCredentials: false)
        startAttempt()
    }

    /// Sends a stored response (a hit, a revalidated or a stale-if-error one) and ends the exchange.
    func answerFromStore(_ answer: StoredAnswer) {
        let body = answer.segments.isEmpty ? nil
            : StoredBodySender(object: answer.object, segments: answer.segments, url: summary.url)
        self.answer(StageAnswer(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: answer.fields,
                                framing: .contentLength, body: body), phase: "stored_body")
    }
}
