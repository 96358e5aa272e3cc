import HTTPTypes
import LookoutCache
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// One forwarded HTTP exchange: the client's request head through its stages (`StagePlan`), its
/// body on the way upstream (`ClientRequest`: pacing, the body limit, a stage's hold), the ordered
/// upstream attempts that serve it (`UpstreamAttempts`: retries, followed redirects and
/// resumptions are more attempts, each a task with its own transaction), and the response relayed
/// back through the stages (`ClientResponse`: its framing, keep-alive, answers and held heads,
/// RFC 9112 §6, §9.3). The exchange keeps what every exchange has and runs the request head's
/// way; every optional capability is a stage.
///
/// The client connection calls down into the exchange, the exchange into its three parts and its
/// stages; results come back through `UpstreamTaskDelegate` (each task reports to the exchange,
/// which lends itself to its attempts for the report), `RequestOwner`, `AttemptsOwner` and
/// `ResponseOwner` (the parts, with the exchange passed to each call),
/// `StageContext` (from a stage) and `ExchangeDelegate` (to the connection). The exchange only
/// writes to the client stream; the connection hears about that stream's failures and tells the
/// exchange on a later turn of the loop.
final class Exchange: @unchecked Sendable {  // confined to the client connection's loop queue
    let id: UInt64
    let context: LoopContext
    /// The client connection that owns this exchange. `unowned`: the connection finishes its
    /// exchange before it goes away, and a finished exchange never calls it (a weak reference
    /// would cost a side-table allocation per connection).
    unowned let delegate: ExchangeDelegate
    /// The request head: the client's, with what a stage holding it edited (`editRequest`).
    var head: RequestHead
    /// What the exchange is, fixed when it is made.
    let traits: ExchangeTraits
    /// Where its records go (the session's monitors), and the connection they name.
    let records: ExchangeRecords
    var summary: ExchangeSummary

    /// The exchange's stages, in plan order (`StagePlan`).
    var stages: [any ExchangeStage] = []
    /// What a stage holds of the exchange, while one does, and where the request's pass stands.
    var holding = StageHold()

    /// The upstream side: each attempt's request and task, and what becomes of it.
    let upstream: UpstreamAttempts<Exchange>
    /// The request body's way upstream (pacing, the stages that watch it, a stage's hold, the
    /// relay); nil for a request without a body.
    var request: ClientRequest<Exchange>?
    /// The response's way to the client: the writer, framing and keep-alive, answers' bodies.
    let response: ClientResponse<Exchange>
    var finished = false

    /// The shaping rule's pacing and cuts, when the host has one (the shaping stage decides; this
    /// applies it to the bytes).
    var shaping: ExchangeShaping?

    /// The session's settings and shared parts, through the records that also name it.
    var environment: ExchangeEnvironment { records.environment }

    /// `background`: a stale-while-revalidate refresh nobody waits for (`BackgroundRevalidation`).
    init(id: UInt64, context: LoopContext, client: ClientResponseWriter, delegate: ExchangeDelegate,
         records: ExchangeRecords, head: consuming RequestHead, origin: Origin, path: String, url: String,
         kind: ExchangeSummary.Kind, clientStreamID: Int32? = nil, background: Bool = false) {
        self.id = id
        self.delegate = delegate
        self.context = context
        self.response = ClientResponse(client: client)
        self.records = records
        self.summary = ExchangeSummary(requestID: id, connectionID: records.connectionID,
                                       clientAddress: records.clientAddress, kind: kind, method: head.method.rawValue,
                                       url: url, httpVersion: head.version.description, start: .now())
        summary.clientStreamID = clientStreamID
        let upgrade = Self.relayedUpgrade(head)
        self.traits = ExchangeTraits(clientKey: origin.ruleKey, upgradeProtocol: upgrade, background: background)
        let request = UpstreamRequest(origin: origin, method: head.method, url: url, target: path,
                                      fields: [:], bodyIsChunked: false, hasBody: head.framing != .none,
                                      asksForUpgrade: false, acceptsTrailers: false)
        let ledger = AttemptLedger(request: request, upstreamPath: path)
        // Last, so the head is moved in rather than copied (its fields, a dozen strings).
        self.head = head
        upstream = UpstreamAttempts(requestID: id, context: context, records: records, ledger: ledger,
                                    upgradeProtocol: upgrade)
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
        environment.counters.exchangesInFlight.add(1, ordering: .relaxed)
        records.created(head, requestID: id, url: summary.url)
        environment.emit(requestContext, RequestDidAuthorize())
        let limit = environment.maxRequestBodyBytes
        if limit > 0, case .contentLength(let length) = head.framing, length > limit {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        if head.framing != .none { request = ClientRequest(keeping: replayableBody()) }
        stages = given ?? environment.stagePlan.stages(for: route, clientKey: traits.clientKey, requestID: id,
                                                   background: traits.background,
                                                   recordsWanted: environment.monitor.wants(.lifecycle))
        runRequestStages()
    }

    /// The store for the request body when the origin's retry or redirect rule may need it for
    /// another attempt, up to the retry rule's replay limit; nil when none will.
    func replayableBody() -> ReplayableBody? {
        let host = upstream.ledger.request.origin.host
        guard head.framing != .none,
              environment.retrier.keepsBodies(forHost: host) || environment.redirectHandler.keepsBodies(forHost: host) else {
            return nil
        }
        let replayLimit = environment.retrier.replayLimit(forHost: host)
        if case .contentLength(let length) = head.framing, length > replayLimit {
            // Too large to keep: streamed, and never sent twice.
            return nil
        }
        return ReplayableBody(limit: replayLimit, directory: environment.temporaryDirectory)
    }

    // MARK: - Stages

    /// The request head through the stages from `holding.nextRequestStage` on, then the first attempt.
    func runRequestStages() {
        while holding.nextRequestStage < stages.count {
            let stage = stages[holding.nextRequestStage]
            holding.nextRequestStage += 1
            guard apply(stage.requestHead(self), from: stage) else { return }
        }
        upstream.startFirst(withBody: head.framing != .none, owner: self)
    }

    /// Acts on a stage's verdict; true when the next stage goes on.
    func apply(_ verdict: StageVerdict, from stage: any ExchangeStage) -> Bool {
        guard !finished else { return false }
        switch verdict {
        case .proceed:
            return true
        case .answer(let answer):
            dropRequestBody()
            response.answer(answer, phase: answer.phase ?? stage.heldPhase, owner: self)
        case .answerLater(let answer):
            response.answerLater(answer, owner: self)
        case .fail(let error):
            fail(error)
        case .hold(let deadline):
            hold(by: stage, deadline: deadline)
        case .holdWithBody(let limit, let deadline):
            hold(by: stage, deadline: deadline)
            if let request {
                request.hold(for: stage, limit: limit, owner: self)
            } else {
                ClientRequest.tellLater(stage, complete: true, owner: self)
            }
        }
        return false
    }

    func hold(by stage: any ExchangeStage, deadline: Double?) {
        holding.stage = stage
        holding.generation &+= 1
        guard let deadline else { return }
        let generation = holding.generation
        context.loop.execute(after: max(deadline, 0)) { [weak self] in
            guard let self, !finished, holding.generation == generation, let held = holding.stage else { return }
            holding.stage = nil
            fail(.stageHoldTimedOut(stage: held.heldPhase, after: deadline))
        }
    }

    /// `StageContext.resume`: the held exchange goes on from the stage after the holding one.
    func resume(_ verdict: StageVerdict, from stage: any ExchangeStage) {
        guard !finished, let held = holding.stage, held === stage else { return }
        holding.stage = nil
        holding.generation &+= 1
        context.loop.execute { [weak self] in
            guard let self, !finished else { return }
            if holding.response != nil {
                response.resumeResponse(verdict, from: stage, owner: self)
                return
            }
            request?.releaseHeld(owner: self)
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
        if case .deferred(let answer)? = response.reply.producer { answer.stop() }
        response.reply.producer = nil
        holding.response = nil
        holding.stage = nil
        forEachStage { $0.exchangeEnd(self) }
        stages = []
    }

    /// Ends the exchange with `error`: an error response if nothing was sent yet, otherwise a
    /// truncated response (the connection closes without completing the body).
    func fail(_ error: ProxyError) {
        guard !finished else { return }
        upstream.stop(owner: self)
        if !response.reply.headSent, case .upstreamFailed = error {
            for stage in stages {
                if let answer = stage.answerInstead(of: error, exchange: self) {
                    response.answer(answer, phase: answer.phase ?? stage.heldPhase, owner: self)
                    return
                }
            }
        }
        if !response.reply.headSent {
            if error.status != nil {
                response.client.writeError(error, requestID: id)
                summary.status = error.status
            }
            finish(error: error, keepAlive: false)
        } else {
            finish(error: error, keepAlive: false, truncate: true)
        }
    }

    // MARK: - From outside: the client connection and an operator

    /// The request is complete at its head, or its body has ended.
    var requestEnded: Bool { request?.ended ?? true }
    /// False while the request is complete or the upstream (or the upload pacing) cannot take more yet.
    var acceptsRequestBody: Bool { request?.accepts(owner: self) ?? false }
    func clientSentBody(_ bytes: UnsafeRawBufferPointer) { request?.clientSent(bytes, owner: self) }
    /// (A bodiless request was already complete at its head.)
    func clientFinishedBody(trailers: HTTPFields?) { request?.clientFinished(trailers: trailers, owner: self) }
    func clientSentInvalidBody(_ error: ProxyError) { fail(error) }

    /// Ends the exchange for an operator: an error response if nothing was sent yet, otherwise
    /// the bytes relayed so far and a reset. The running attempt's upstream connection is closed.
    func cancel(_ error: ProxyError) {
        shaping?.response?.cancel()
        fail(error)
    }

    func clientDidClose(_ error: ProxyError) {
        guard !finished else { return }
        upstream.stop(owner: self)
        shaping?.response?.cancel()
        finish(error: error, keepAlive: false)
    }

    func abort(_ error: ProxyError) {
        guard !finished else { return }
        upstream.stop(owner: self)
        shaping?.response?.cancel()
        if !response.reply.headSent {
            response.client.writeError(error, requestID: id)
            summary.status = error.status
        }
        finish(error: error, keepAlive: false)
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
        upstream.ledger.waitingForNext = false
        request?.stop()
        closeStages()
        summary.error = error
        summary.transactions = upstream.ledger.transactions
        if !traits.background {
            context.recentRequests.add(RecentRequests.Entry(
                id: id, head: holding.clientHead ?? head, url: summary.mappedFrom ?? summary.url, kind: summary.kind,
                capturePath: summary.capture?.request, bodyBytes: request?.received ?? 0))
        }
        if summary.redirects > 0 { summary.finalURL = upstream.ledger.request.url }
        environment.counters.exchangesInFlight.subtract(1, ordering: .relaxed)
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

/// The exchange is the delegate of each attempt's task: a task reports straight to it, and it
/// hands the report to its attempts (`UpstreamAttempts`), lending itself for the call.
extension Exchange: UpstreamTaskDelegate {
    func taskIsReadyForBody(_ task: UpstreamTask) { attemptIsReadyForBody(task) }
    func taskDidDrainRequestBody(_ task: UpstreamTask) { attemptDrainedBody(task) }
    func task(_ task: UpstreamTask, didSendBodyData bytes: Int) { upstream.task(task, didSendBodyData: bytes) }
    func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead) {
        upstream.task(task, didReceiveInformational: head, owner: self)
    }
    func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead) -> ResponseDisposition {
        upstream.task(task, didReceiveResponse: consume head, owner: self)
    }
    func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64) -> Bool {
        upstream.task(task, didReceiveData: bytes, total: total, owner: self)
    }
    func task(_ task: UpstreamTask, didFinishResponseWith trailers: HTTPFields?) { attemptResponseEnded(trailers: trailers) }
    func taskDidSuspend(_ task: UpstreamTask) { upstream.taskDidSuspend(task) }
    func taskDidResume(_ task: UpstreamTask) { upstream.taskDidResume(task) }
    func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: consuming TransactionMetrics,
              notifyExchange: Bool) {
        upstream.task(task, didCompleteWith: error, metrics: consume metrics, notifyExchange: notifyExchange, owner: self)
    }
}

/// The exchange's side of its attempts (`UpstreamAttempts`): the request body each one takes,
/// and the response each one lets through, on its way to the client.
extension Exchange: AttemptsOwner, ResponseOwner, RequestOwner {
    var stageList: [any ExchangeStage] { stages }

    var responseState: AttemptsOwnerResponseState {
        AttemptsOwnerResponseState(headSent: response.reply.headSent, held: holding.response != nil, finished: finished)
    }

    // The request body each attempt takes comes from the request's way upstream.
    func attemptStarts() { request?.attemptStarts() }
    func attemptDrainedBody(_ task: UpstreamTask) { request?.attemptDrained(task, owner: self) }
    var requestBodyIsReplayable: Bool { request?.isReplayable ?? false }
    func dropRequestBody() { request?.drop(owner: self) }

    /// The attempt's head is on its way: it gets the body (a bodiless request is complete at once).
    func attemptIsReadyForBody(_ task: UpstreamTask) {
        guard let request else {
            task.finishBody(trailers: nil)
            return
        }
        request.attemptIsReady(task, owner: self)
    }

    /// `StageContext.editResponse`: the response's own (`ClientResponse.editResponse`).
    func editResponse(_ edits: ExchangeEdits) -> String? {
        response.editResponse(edits, owner: self)
    }

    func clientDidDrain() {
        response.clientDidDrain(owner: self)
    }

    // The response each attempt lets through goes to the response's way to the client.
    func attemptInformational(_ head: ResponseHead) { response.attemptInformational(head, owner: self) }
    func attemptResponse(_ head: consuming ResponseHead, location: String?) -> AttemptResponseOutcome {
        response.attemptResponse(head, location: location, owner: self)
    }
    func attemptBody(_ bytes: UnsafeRawBufferPointer) -> Bool { response.attemptBody(bytes, owner: self) }
    func attemptResponseEnded(trailers: HTTPFields?) { response.attemptResponseEnded(trailers: trailers, owner: self) }

    func attemptsFinished() {
        finish(error: nil, keepAlive: response.reply.keepAlive)
    }

    func attemptsFailed(_ error: ProxyError) {
        fail(error)
    }

    func attemptsAnswer(_ answer: StageAnswer) {
        response.answer(answer, phase: answer.phase ?? "answering", owner: self)
    }

    /// The response broke off while its head was held: the client gets the error instead.
    func attemptEndedWhileHeld(error: ProxyError?) {
        guard let error else { return }
        holding.response = nil
        fail(error)
    }

    // MARK: - Protocol switch

    /// After a 101 the exchange becomes a tunnel over the same two connections; the tunnel
    /// writes this exchange's summary when both sides are done.
    func attemptSwitchedProtocols(_ task: UpstreamTask, upstream: ByteStream, leftover upstreamLeftover: [UInt8]) {
        finished = true
        closeStages()
        guard let upgradeProtocol = traits.upgradeProtocol, let stream = response.client.switchableStream else { preconditionFailure("a switch nobody asked for") }
        let tunnel = Tunnel(head: head, summary: summary, upgrade: response.reply.acceptedUpgrade ?? upgradeProtocol,
                            origin: self.upstream.ledger.request.origin, taskID: task.id, metrics: task.metrics, client: stream,
                            delegate: delegate, environment: environment, context: context, records: records,
                            shaping: shaping)
        delegate.exchangeDidSwitchProtocols(to: tunnel)
        tunnel.adopt(upstream, upstreamLeftover: upstreamLeftover,
                     capture: environment.stagePlan.messageCapture(for: traits.clientKey))
    }
}

// MARK: - The handle the stages see

/// What the exchange's stages may see and do of it.
extension Exchange: StageContext {
    /// Lent, not copied: a stage that reads one field of it (most read the method) does not
    /// retain every string of the head.
    var requestHead: RequestHead {
        _read { yield head }
    }

    var heldResponse: (status: Int, fields: HTTPFields)? {
        holding.response.map { ($0.status, $0.fields) }
    }

    var facts: ExchangeFacts {
        ExchangeFacts(requestID: id, connectionID: records.connectionID, clientAddress: records.clientAddress,
                      clientKey: traits.clientKey, kind: summary.kind, httpVersion: summary.httpVersion,
                      startedAt: summary.start, loop: context.loop, url: summary.url, route: route,
                      isFirstHop: summary.redirects == 0, asksForUpgrade: traits.upgradeProtocol != nil,
                      modified: !summary.modifiedBy.isEmpty, requestSentAt: upstream.task?.metrics.requestEnd,
                      upstreamTLS: upstream.task?.metrics.tls)
    }

    var route: StageRoute {
        StageRoute(origin: upstream.ledger.request.origin, path: upstream.ledger.upstreamPath, url: upstream.ledger.request.url)
    }

    func emit<Kind: EventKind>(_ make: @autoclosure () -> Kind, for attempt: AttemptFacts?) {
        // The context reads the clock: built only when a monitor takes the record.
        environment.emit(EventContext(connectionID: records.connectionID, requestID: id, taskID: attempt?.taskID), make())
    }

    func reroute(to route: StageRoute, hostField: String?) {
        let key = HostRuleKey(route.origin.host)
        let origin = Origin(host: route.origin.host, port: route.origin.port, isSecure: route.origin.isSecure,
                            parent: environment.parentProxy(for: key), ruleKey: key)
        upstream.ledger.hostOverride = hostField
        upstream.ledger.upstreamPath = route.path
        upstream.ledger.firstHost = origin.host
        upstream.ledger.request = UpstreamRequest(origin: origin, method: head.method, url: route.url, target: route.path, fields: [:],
                                  bodyIsChunked: false, hasBody: head.framing != .none, asksForUpgrade: false,
                                  acceptsTrailers: false)
        // The new origin's rules say whether the body is kept for another attempt (none read yet).
        request?.keep(replayableBody())
    }

    func revalidateInBackground() {
        BackgroundRevalidation.start(environment: environment, context: context, url: summary.url, origin: upstream.ledger.request.origin,
                                     path: upstream.ledger.upstreamPath, requestFields: head.headerFields)
    }

    func record(_ part: StageRecord) {
        summary.apply(part)
    }

    func attach(_ value: any ExchangeStage, replacing stage: any ExchangeStage) {
        guard let index = stages.firstIndex(where: { $0 === stage }) else { return }
        stages[index] = value
    }

    func shape(with rule: ShapingRule) -> ExchangeShaping {
        let shaping = ExchangeShaping(rule: rule)
        self.shaping = shaping
        if rule.shapesResponse {
            let writer = ShapedResponseWriter(base: response.client, rule: rule, loop: context.loop, delegate: self)
            shaping.response = writer
            response.client = writer
        }
        if head.framing != .none {
            shaping.upload = ExchangeShaping.pacer(kbps: rule.uploadKbps, bytesPerSecond: rule.uploadBytesPerSecond,
                                                   loop: context.loop, sink: { [unowned self] bytes in
                request?.take(bytes, owner: self)
                return !(request?.pausedForUpstream ?? false) && !finished
            }, ready: { [unowned self] in
                guard !finished else { return }
                delegate.exchangeCanTakeInput()
            })
        }
        return shaping
    }

    /// A holding stage's edits to the request before it goes upstream (`ExchangeEdits`); the
    /// reason when they cannot apply.
    func editRequest(_ edits: ExchangeEdits) -> String? {
        guard holding.stage != nil, holding.response == nil, !finished else { return "the request is not held" }
        let whole = head.framing == .none || request?.heldWhole == true
        let checked: CheckedRequestEdits
        switch CheckedRequestEdits.check(edits, against: head, bodyHeldWhole: whole) {
        case .failure(let refusal): return refusal.message
        case .success(let edits): checked = edits
        }
        if holding.clientHead == nil { holding.clientHead = head }
        if let method = checked.method { head.method = method }
        if let body = checked.body {
            head.framing = .contentLength(UInt64(body.count))
            head.contentLengthIsList = false
            let request = self.request ?? ClientRequest(keeping: nil)
            request.replaceBody(with: body)
            self.request = request
        }
        if let host = checked.hostField { upstream.ledger.hostOverride = host }
        head.headerFields = checked.fields
        if let route = checked.route { reroute(to: route, hostField: nil) }
        return nil
    }
}

extension Exchange: ShapedResponseWriterDelegate {
    func shapedWriterCanTakeMore() {
        guard !finished else { return }
        response.resumeResponse(owner: self)
    }

    func shapedWriterReachedResetPoint(after bytes: UInt64) {
        guard !finished, !(shaping?.resetInjected ?? false) else { return }
        fail(injectReset(after: bytes))
    }

    /// `faults.reset_after_bytes` hit: its record, and the error the exchange breaks off with.
    func injectReset(after bytes: UInt64) -> ProxyError {
        shaping?.resetInjected = true
        ExchangeShaping.record(.resetAfterBytes(bytes), rule: shaping?.rule, exchange: self)
        return .injectedFault(reason: .resetAfterBytes(bytes, rule: shaping?.rule.name ?? ""))
    }
}
