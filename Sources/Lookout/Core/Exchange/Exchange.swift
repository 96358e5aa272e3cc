import HTTPTypes
import LookoutCache
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// One forwarded HTTP exchange: the client's request through its stages (`StagePlan`), the
/// ordered upstream attempts that serve it (retries and followed redirects are more attempts,
/// each a task with its own transaction), and the response relayed back through the stages. Owns
/// the framing decisions for both directions (RFC 9112 §6, §7) and the plumbing to the client and
/// the upstream; every optional capability is a stage.
///
/// The client connection calls down into the exchange, the exchange into its current task and its
/// stages; results come back through `UpstreamTaskDelegate` (the exchange is its attempts'
/// delegate), `StageContext` (from a stage) and `ExchangeDelegate` (to the connection). The exchange only writes to the client
/// stream; the connection hears about that stream's failures and tells the exchange on a later
/// turn of the loop.
final class Exchange: @unchecked Sendable {  // confined to the client connection's loop queue
    let id: UInt64
    let environment: ExchangeEnvironment
    let context: LoopContext
    /// Where the response goes (an HTTP/1.x connection or an HTTP/2 stream); only ever written to
    /// here. A shaped response goes through `shaping.response`, which wraps the connection's writer.
    var client: ClientResponseWriter
    /// The client connection that owns this exchange. `unowned`: the connection finishes its
    /// exchange before it goes away, and a finished exchange never calls it (a weak reference
    /// would cost a side-table allocation per connection).
    unowned let delegate: ExchangeDelegate
    /// The request head: the client's, with what a stage holding it edited (`editRequest`).
    var head: RequestHead
    /// The head as the client sent it, kept once a stage edits `head` (a resend sends this).
    var clientHead: RequestHead?
    let records: ExchangeRecords
    /// The protocol switch asked for (`Upgrade` with `Connection: upgrade`) that goes upstream,
    /// e.g. "websocket"; nil when none was asked for or it is not relayed (see `relayedUpgrade`).
    let upgradeProtocol: String?
    /// The protocol the origin's 101 named.
    var acceptedUpgrade: String?
    var summary: ExchangeSummary
    /// The host the client addressed, for the per-host rules of the exchange (capture, shaping).
    let clientKey: HostRuleKey

    // Stages.
    var stages: [any ExchangeStage] = []
    /// The next stage the request head goes to.
    var nextStage = 0
    /// The stage that holds the exchange, while one does.
    var holdingStage: (any ExchangeStage)?
    /// Counts holds, so that a deadline timer knows whether its hold is still the current one.
    var holdGeneration: UInt64 = 0
    /// The response head a stage holds, while one does.
    var heldResponse: HeldResponse?
    /// The request body a stage holding the request head reads (`holdWithBody`).
    var heldRequestBody: HeldRequestBody?

    // Attempts.
    /// What the current (or next) attempt sends.
    var request: UpstreamRequest
    /// The first hop's origin-form target.
    var upstreamPath: String
    /// The host the client addressed (or a map remote rule sent it to): only it gets the client's credentials.
    var firstHost: String
    /// A map remote rule's `preserve_host`: the Host the client sent, kept on the first hop.
    var hostOverride: String?
    var task: UpstreamTask?
    var retriesByRule = 0
    /// URLs requested before the current one (loop detection).
    var visitedURLs: Set<String> = []
    /// One per finished attempt, in order — kept only once there is a second (the one attempt most
    /// exchanges make is `summary.upstream`, with no array to allocate).
    var transactions: [TransactionMetrics] = []
    /// Attempts whose transaction `record` kept.
    var recordedAttempts = 0
    /// Set when the current response is held back: what to do once its task has ended.
    var pendingPlan: ResponsePlan?
    /// The relayed GET response a broken body may be resumed for (`retry.rules[i].resume`).
    var resume: ResumeState?
    /// A retry's backoff is running.
    var waitingForNextAttempt = false

    // Request body, client → upstream.
    var requestEnded = false
    var requestTrailers: HTTPFields?
    var bodyPausedForUpstream = false
    var earlyBody: [UInt8] = []
    var requestBodyBytes: UInt64 = 0
    var taskTakesBody = false
    /// The body kept for another attempt (retry rules, followed 307/308), when a rule may need it.
    var replay: ReplayableBody?
    /// How much of `replay` the current task has been sent.
    var replaySent: UInt64 = 0
    /// Nothing goes upstream any more (a followed redirect turned the request into a bodiless GET,
    /// or a stage answers): the rest of the body is read and dropped.
    var bodyDropped = false

    // Response, upstream → client.
    var responseHeadSent = false
    var clientFraming = ClientFraming.none
    var keepClientAlive = true
    var finished = false
    /// The body of an answer (a stage's, or a stored response) being sent while the client keeps up.
    var answerBody: (any ResponseBodySource)?
    /// What an operator sees while `answerBody` is sent.
    var answerPhase = ""

    /// An answer a stage gave whose head comes later (a collapsed cache miss).
    var deferred: (any DeferredAnswer)?
    /// A stale-while-revalidate refresh nobody waits for (see `BackgroundRevalidation`).
    var revalidatesInBackground = false

    /// The shaping rule's pacing and cuts, when the host has one (the shaping stage decides; this
    /// applies it to the bytes).
    var shaping: ExchangeShaping?

    init(id: UInt64, environment: ExchangeEnvironment, context: LoopContext, client: ClientResponseWriter, delegate: ExchangeDelegate,
         records: ExchangeRecords, head: consuming RequestHead, origin: Origin, path: String, url: String,
         kind: ExchangeSummary.Kind, clientStreamID: Int32? = nil) {
        self.id = id
        self.delegate = delegate
        self.environment = environment
        self.context = context
        self.client = client
        self.records = records
        self.summary = ExchangeSummary(requestID: id, connectionID: records.connectionID,
                                       clientAddress: records.clientAddress, kind: kind, method: head.method.rawValue,
                                       url: url, httpVersion: head.version.description, start: .now())
        summary.clientStreamID = clientStreamID
        self.upgradeProtocol = Self.relayedUpgrade(head)
        self.request = UpstreamRequest(origin: origin, method: head.method, url: url, target: path,
                                       fields: [:], bodyIsChunked: false, hasBody: head.framing != .none,
                                       asksForUpgrade: false, acceptsTrailers: false)
        self.upstreamPath = path
        self.firstHost = origin.host
        self.clientKey = origin.ruleKey
        // Last, so the head is moved in rather than copied (its fields, a dozen strings).
        self.head = head
    }

    /// Which protocol switches are relayed (RFC 9110 §7.8): any the client asks for on a request
    /// without a body (a WebSocket handshake is a bodiless GET), except `h2c` — the exchange would
    /// continue as HTTP/2 inside an opaque tunnel, so it stays HTTP/1.1 and visible instead.
    static func relayedUpgrade(_ head: RequestHead) -> String? {
        guard let upgrade = head.upgrade, head.framing == .none else { return nil }
        return FieldList.contains("h2c", in: upgrade) ? nil : upgrade
    }

    var requestContext: EventContext { EventContext(connectionID: records.connectionID, requestID: id) }

    // MARK: - Start

    func start() {
        start(stages: nil)
    }

    /// Starts with `given` in place of the stages the session's plan calls for (tests).
    func start(stages given: [any ExchangeStage]?) {
        environment.exchangesInFlight.add(1, ordering: .relaxed)
        records.created(head, requestID: id, url: summary.url)
        environment.emit(requestContext, RequestDidAuthorize())
        let limit = environment.maxRequestBodyBytes
        if limit > 0, case .contentLength(let length) = head.framing, length > limit {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        if head.framing == .none { requestEnded = true }
        prepareReplay()
        stages = given ?? environment.stagePlan.stages(for: route, clientKey: clientKey, requestID: id,
                                                   background: revalidatesInBackground,
                                                   recordsWanted: environment.monitor.wants(.lifecycle))
        runRequestStages()
    }

    /// Keeps the request body for another attempt when the origin's retry or redirect rule may
    /// need it, up to the retry rule's replay limit.
    func prepareReplay() {
        let host = request.origin.host
        guard head.framing != .none,
              environment.retrier.keepsBodies(forHost: host) || environment.redirectHandler.keepsBodies(forHost: host) else {
            replay = nil
            return
        }
        let replayLimit = environment.retrier.replayLimit(forHost: host)
        if case .contentLength(let length) = head.framing, length > replayLimit {
            // Too large to keep: streamed, and never sent twice.
            replay = nil
        } else {
            replay = ReplayableBody(limit: replayLimit, directory: environment.temporaryDirectory)
        }
    }

    // MARK: - Stages

    /// The request head through the stages from `nextStage` on, then the first attempt.
    func runRequestStages() {
        while nextStage < stages.count {
            let stage = stages[nextStage]
            nextStage += 1
            guard apply(stage.requestHead(self), from: stage) else { return }
        }
        request = makeUpstreamRequest(method: head.method, origin: request.origin, path: upstreamPath, url: summary.url,
                                      withBody: head.framing != .none, stripCredentials: false)
        startAttempt()
    }

    /// Acts on a stage's verdict; true when the next stage goes on.
    func apply(_ verdict: StageVerdict, from stage: any ExchangeStage) -> Bool {
        guard !finished else { return false }
        switch verdict {
        case .proceed:
            return true
        case .answer(let answer):
            dropRequestBody()
            self.answer(answer, phase: answer.phase ?? stage.heldPhase)
        case .answerLater(let answer):
            answerLater(answer)
        case .fail(let error):
            fail(error)
        case .hold(let deadline):
            hold(by: stage, deadline: deadline)
        case .holdWithBody(let limit, let deadline):
            holdRequest(by: stage, limit: limit, deadline: deadline)
        }
        return false
    }

    func hold(by stage: any ExchangeStage, deadline: Double?) {
        holdingStage = stage
        holdGeneration &+= 1
        guard let deadline else { return }
        let generation = holdGeneration
        context.loop.execute(after: max(deadline, 0)) { [weak self] in
            guard let self, !finished, holdGeneration == generation, let held = holdingStage else { return }
            holdingStage = nil
            fail(.stageHoldTimedOut(stage: held.heldPhase, after: deadline))
        }
    }

    /// `StageContext.resume`: the held exchange goes on from the stage after the holding one.
    func resume(_ verdict: StageVerdict, from stage: any ExchangeStage) {
        guard !finished, let held = holdingStage, held === stage else { return }
        holdingStage = nil
        holdGeneration &+= 1
        context.loop.execute { [weak self] in
            guard let self, !finished else { return }
            if heldResponse != nil {
                resumeResponse(verdict, from: stage)
                return
            }
            releaseHeldRequestBody()
            if apply(verdict, from: stage) { runRequestStages() }
        }
    }

    /// Calls `body` with each stage in order. The list is held for the loop, and each stage is
    /// lent rather than copied out of it (a copy retains and releases it, at every point of every
    /// exchange, for every stage).
    @inline(__always) func forEachStage(_ body: (borrowing any ExchangeStage) -> Void) {
        let list = stages
        list.withUnsafeBufferPointer { stages in
            for index in stages.indices { body(stages[index]) }
        }
    }

    /// Body bytes on their way to the client, for the stages that watch them.
    func responseBodyPassed(_ bytes: UnsafeRawBufferPointer) {
        forEachStage { $0.responseBody(bytes, exchange: self) }
    }

    /// The response body is complete (with the origin's trailers, when it sent some).
    func responseBodyEnded(trailers: HTTPFields? = nil) {
        forEachStage { $0.responseEnd(trailers: trailers, exchange: self) }
    }

    // MARK: - Finishing

    /// Stops what the stages still have open (a half-written cache object or body file, a fill
    /// followed) and lets each write its part of the summary.
    func closeStages() {
        answerBody = nil
        heldResponse = nil
        heldRequestBody = nil
        deferred?.stop()
        deferred = nil
        holdingStage = nil
        forEachStage { $0.exchangeEnd(self) }
        stages = []
    }

    /// Ends the exchange with `error`: an error response if nothing was sent yet, otherwise a
    /// truncated response (the connection closes without completing the body).
    func fail(_ error: ProxyError) {
        guard !finished else { return }
        stopTask()
        if !responseHeadSent, case .upstreamFailed = error {
            for stage in stages {
                if let answer = stage.answerInstead(of: error, exchange: self) {
                    self.answer(answer, phase: answer.phase ?? stage.heldPhase)
                    return
                }
            }
        }
        if !responseHeadSent {
            if error.status != nil {
                client.writeError(error, requestID: id)
                summary.status = error.status
            }
            finish(error: error, keepAlive: false)
        } else {
            finish(error: error, keepAlive: false, truncate: true)
        }
    }

    func finish(error: ProxyError?, keepAlive: Bool, truncate: Bool = false) {
        guard !finished else { return }
        if let shaping, let bytes = shaping.response?.resetPoint, !shaping.resetInjected {
            // The response ended upstream before the reset was heard of: the client still gets it.
            finish(error: injectReset(after: bytes), keepAlive: false, truncate: true)
            return
        }
        if let shaped = shaping?.response, shaped.isHolding {
            // The paced bytes go out first; the exchange ends (or breaks off) behind them.
            shaped.whenFlushed { [weak self] in self?.finish(error: error, keepAlive: keepAlive, truncate: truncate) }
            return
        }
        finished = true
        shaping?.upload?.cancel()
        waitingForNextAttempt = false
        replay = nil
        closeStages()
        summary.error = error
        summary.transactions = transactions
        if !revalidatesInBackground {
            context.recentRequests.add(RecentRequests.Entry(
                id: id, head: clientHead ?? head, url: summary.mappedFrom ?? summary.url, kind: summary.kind,
                capturePath: summary.capture?.request, bodyBytes: requestBodyBytes))
        }
        if summary.redirects > 0 { summary.finalURL = request.url }
        environment.exchangesInFlight.subtract(1, ordering: .relaxed)
        records.end(&summary)
        records.post(takeSummary())
        if truncate {
            // The bytes relayed so far still go out, then a reset: the client must see a failed
            // transfer, never a short "complete" one.
            delegate.exchangeDidBreakOff()
            return
        }
        delegate.exchangeDidFinish(keepAlive: keepAlive)
    }

    /// The summary, moved out for its record (a copy would retain and release each of its strings
    /// and arrays). The finished exchange keeps what identifies it (ids, client, method, URL,
    /// version: work started as it finishes, such as a background revalidation, reads the URL).
    private func takeSummary() -> ExchangeSummary {
        var ended = ExchangeSummary(requestID: summary.requestID, connectionID: summary.connectionID,
                                    clientAddress: summary.clientAddress, kind: summary.kind, method: summary.method,
                                    url: summary.url, httpVersion: summary.httpVersion, start: summary.start)
        swap(&ended, &summary)
        return ended
    }
}
