import HTTPTypes
import LookoutCache
import LookoutHTTP
import LookoutIO
import LookoutTLS

/// One forwarded HTTP exchange: the client's request, the ordered upstream attempts that serve it
/// (retries and followed redirects are more attempts, each a task with its own transaction), and
/// the response relayed back. Owns the framing decisions for both directions (RFC 9112 §6, §7).
///
/// Data flows one way: the client connection calls down into the exchange, the exchange into its
/// current task; results come back through `SessionDelegate` (from the task) and `ExchangeDelegate`
/// (to the connection). The exchange only writes to the client stream; the connection hears about
/// that stream's failures and tells the exchange on a later turn of the loop.
final class Exchange: TaskMapIdentifiable, @unchecked Sendable {  // confined to the client connection's loop queue
    /// HTTPTypes models Host as the :authority pseudo-field; on the HTTP/1.1 wire it is a plain field.
    static let hostHeader = HTTPField.Name("Host")!

    let id: UInt64
    let session: Session
    let context: LoopContext
    /// Where the response goes (an HTTP/1.x connection or an HTTP/2 stream); only ever written to
    /// here. A shaped response goes through `shaped`, which wraps the connection's writer.
    private var client: ClientResponseWriter
    /// The client connection that owns this exchange. `unowned`: the connection finishes its
    /// exchange before it goes away, and a finished exchange never calls it (a weak reference
    /// would cost a side-table allocation per connection).
    private unowned let delegate: ExchangeDelegate
    let head: RequestHead
    private let records: ExchangeRecords
    /// The protocol switch asked for (`Upgrade` with `Connection: upgrade`) that goes upstream,
    /// e.g. "websocket"; nil when none was asked for or it is not relayed (see `relayedUpgrade`).
    let upgradeProtocol: String?
    /// The protocol the origin's 101 named.
    private var acceptedUpgrade: String?
    private(set) var summary: ExchangeSummary

    // Attempts.
    /// What the current (or next) attempt sends.
    private var request: UpstreamRequest
    private var task: UpstreamTask?
    private var retriesByRule = 0
    /// URLs requested before the current one (loop detection).
    private var visitedURLs: Set<String> = []
    /// One per finished attempt, in order — kept only once there is a second (the one attempt most
    /// exchanges make is `summary.upstream`, with no array to allocate).
    private var transactions: [TransactionMetrics] = []
    /// Set when the current response is held back: what to do once its task has ended.
    private var pendingPlan: ResponsePlan?
    /// A retry's backoff is running.
    private var waitingForNextAttempt = false

    // Request body, client → upstream.
    private var requestEnded = false
    private var requestTrailers: HTTPFields?
    private var bodyPausedForUpstream = false
    private var earlyBody: [UInt8] = []
    private var requestBodyBytes: UInt64 = 0
    private var taskTakesBody = false
    /// The body kept for another attempt (retry rules, followed 307/308), when a rule may need it.
    private var replay: ReplayableBody?
    /// How much of `replay` the current task has been sent.
    private var replaySent: UInt64 = 0
    /// A followed redirect turned the request into a bodiless GET: the rest of the body is read and dropped.
    private var bodyDropped = false

    // Response, upstream → client.
    private var responseHeadSent = false
    private var clientFraming = ClientFraming.none
    private var keepClientAlive = true
    private var finished = false

    // The shared cache.
    /// This exchange's lookup, validation and store (nil when the cache is off).
    private var cache: ExchangeCache?
    /// A stored response to answer with once the current task has ended (a 304 validated it).
    private var pendingAnswer: StoredAnswer?
    /// Sends a stored body while the client keeps up.
    private var storedBody: StoredBodySender?
    /// Follows another exchange's fetch of the same URL (a collapsed miss).
    private var follower: FillFollower?
    /// A stale-while-revalidate refresh nobody waits for (see `BackgroundRevalidation`).
    var revalidatesInBackground = false
    /// The exchange's bodies written to files (`capture.rules`), when its host has a rule.
    private var capture: ExchangeCapture?

    // Map and shaping.
    /// The map-local rule that answers this request from a file (no upstream).
    private var mapLocal: MapLocalRule?
    /// Sends a map-local file while the client keeps up.
    private var fileBody: LocalFileSender?
    /// A map remote rule's `preserve_host`: the Host the client sent, kept on the first hop.
    private var hostOverride: String?
    /// The host's shaping rule, when it has one.
    private var shapingRule: ShapingRule?
    /// The response writer that paces, stalls or cuts the response (`client` is it, then).
    private var shaped: ShapedResponseWriter?
    /// Paces the request body toward the origin (`upload_kbps`).
    private var uploadPacer: PacedSender?
    /// The client's body ended while the upload pacer still held bytes: the end follows them.
    private var requestEndWaitsForPacing = false
    /// The rule's latency is running before the exchange goes on.
    private var waitingForLatency = false
    /// `faults.reset_after_bytes` was applied.
    fileprivate var resetInjected = false

    init(id: UInt64, session: Session, context: LoopContext, client: ClientResponseWriter, delegate: ExchangeDelegate,
         records: ExchangeRecords, head: consuming RequestHead, origin: Origin, path: String, url: String,
         kind: ExchangeSummary.Kind, clientStreamID: Int32? = nil) {
        self.id = id
        self.delegate = delegate
        self.session = session
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
        // Last, so the head is moved in rather than copied (its fields, a dozen strings).
        self.head = head
    }

    /// The first hop's origin-form target.
    private var upstreamPath: String

    /// The client's `TE` lists `trailers` (RFC 9110 §10.1.4).
    private var acceptsTrailers: Bool {
        guard let te = head.headerFields[.te] else { return false }
        var found = false
        FieldList.forEachElement(of: te) { element in
            if element.equalsLowercase("trailers") { found = true }
        }
        return found
    }
    /// The host the client addressed (or a map remote rule sent it to): only it gets the client's credentials.
    private var firstHost: String

    /// Which protocol switches are relayed (RFC 9110 §7.8): any the client asks for on a request
    /// without a body (a WebSocket handshake is a bodiless GET), except `h2c` — the exchange would
    /// continue as HTTP/2 inside an opaque tunnel, so it stays HTTP/1.1 and visible instead.
    static func relayedUpgrade(_ head: RequestHead) -> String? {
        guard let upgrade = head.upgrade, head.framing == .none else { return nil }
        var asksForH2C = false
        FieldList.forEachElement(of: upgrade) { element in
            if element.equalsLowercase("h2c") { asksForH2C = true }
        }
        return asksForH2C ? nil : upgrade
    }

    private var requestContext: EventContext { EventContext(connectionID: records.connectionID, requestID: id) }

    // MARK: - Start

    func start() {
        session.exchangesInFlight.add(1, ordering: .relaxed)
        records.created(head, requestID: id, url: summary.url)
        session.emit(requestContext, RequestDidAuthorize())
        let limit = session.configuration.maxRequestBodyBytes
        if limit > 0, case .contentLength(let length) = head.framing, length > limit {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        // Per-host rules of the exchange (capture, shaping) follow the host the client addressed;
        // those of the connection (trust, retry, parent proxy) the origin actually contacted.
        let clientKey = request.origin.ruleKey
        if !revalidatesInBackground, !session.configuration.mapRules.isEmpty, !applyMap() { return }
        let origin = request.origin
        if head.framing != .none, session.retrier.keepsBodies(forHost: origin.host)
            || session.redirectHandler.keepsBodies(forHost: origin.host) {
            let replayLimit = session.retrier.replayLimit(forHost: origin.host)
            if case .contentLength(let length) = head.framing, length > replayLimit {
                // Too large to keep: streamed, and never sent twice.
            } else {
                replay = ReplayableBody(limit: replayLimit, directory: session.configuration.temporaryDirectory)
            }
        }
        if head.framing == .none { requestEnded = true }
        if let store = session.captureStore, !revalidatesInBackground,
           let match = session.configuration.capture?.rules.match(for: clientKey) {
            capture = ExchangeCapture(store: store, rule: match.rule, requestID: id)
        }
        if !revalidatesInBackground, let match = session.configuration.shapingRules.match(for: clientKey) {
            let latency = applyShaping(match.rule)
            if latency > 0 {
                // Dispatch's own timer: the loop's deadline list is only good to 50 ms.
                waitingForLatency = true
                context.loop.execute(after: latency) { [weak self] in
                    guard let self, !finished, waitingForLatency else { return }
                    waitingForLatency = false
                    proceed()
                }
                return
            }
        }
        proceed()
    }

    /// After the shaping rule's latency: an injected status, a map-local answer, the cache, or upstream.
    private func proceed() {
        if let rule = shapingRule, let code = rule.faultStatus, rule.drawsFaultStatus() {
            recordFault(.status(code), rule: rule)
            fail(.injectedFault(reason: .status(code: code, rule: rule.name)))
            return
        }
        if let mapLocal {
            answerFromFile(mapLocal)
            return
        }
        let origin = request.origin
        var validators: HTTPFields?
        if let shared = session.cache {
            let cache = ExchangeCache(cache: shared, url: summary.url, head: head, hostKey: origin.ruleKey,
                                      validatesAlways: revalidatesInBackground,
                                      recordsWanted: session.monitor.wants(.lifecycle))
            self.cache = cache
            let (lookup, record) = cache.lookUp(head: head, hasUpgrade: upgradeProtocol != nil)
            session.emit(requestContext, record)
            switch lookup {
            case .answer(let answer):
                answerFromStore(answer)
                if cache.wantsBackgroundRevalidation {
                    BackgroundRevalidation.start(session: session, context: context, url: summary.url, origin: origin,
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
    private func advanceFollower(afterDrain: Bool) {
        guard let follower, !finished else { return }
        let progress = follower.advance(client: client, afterDrain: afterDrain, observe: { [self] in captured($0) }) {
            status, reason, fields, framing in
            summary.status = status
            decideKeepAlive(possible: requestEnded && framing != .untilClose, fields: &fields)
            sendResponseHead(status: status, reasonPhrase: reason, fields: &fields, framing: framing)
        }
        switch progress {
        case .waiting:
            return
        case .done:
            self.follower = nil
            finish(error: nil, keepAlive: keepClientAlive)
        case .failed:
            self.follower = nil
            finish(error: .sessionUnavailable(reason: .cacheReadFailed(url: summary.url)), keepAlive: false,
                   truncate: responseHeadSent)
        case .goUpstream:
            self.follower = nil
            if let cache { session.emit(requestContext, cache.followerGoesUpstream()) }
            request = makeUpstreamRequest(method: head.method, origin: request.origin, path: upstreamPath, url: summary.url,
                                          withBody: false, stripCredentials: false)
            startAttempt()
        }
    }

    /// The request head for one hop: hop-by-hop fields removed (RFC 9110 §7.6.1), Host
    /// from the target (RFC 9112 §3.2.2), framing fields in canonical form, then the adapters.
    private func makeUpstreamRequest(method: HTTPRequest.Method, origin: Origin, path: String, url: String,
                                     withBody: Bool, stripCredentials: Bool,
                                     validators: HTTPFields? = nil) -> UpstreamRequest {
        // Built in place inside the head the adapters change: a separate copy would be copied
        // again by the first adapter that appends a field (one allocation per request).
        var upstream = UpstreamRequestHead(method: method, target: path, authority: origin.authority,
                                           headerFields: head.headerFields)
        // The fields are still the client's (the summary logs them), so the first change copies
        // them; reserving room for Host and Via makes that copy the only allocation — set in
        // place, Host copied them at their exact size and the appended Via grew them again.
        upstream.headerFields.reserveCapacity(head.headerFields.count + 2)
        upstream.headerFields[Exchange.hostHeader] = hostOverride ?? origin.hostFieldValue
        HopByHopHeaders.remove(from: &upstream.headerFields)
        var chunked = false
        if withBody {
            switch head.framing {
            case .chunked:
                // Re-chunked hop by hop; codings before "chunked" (e.g. gzip) describe the body itself.
                upstream.headerFields[.transferEncoding] = TransferCoding.canonicalField(head.headerFields)
                chunked = true
            case .contentLength(let length):
                // RFC 9110 §8.6: a list of identical values goes on as one value, so the next hop
                // cannot frame the body differently.
                if head.contentLengthIsList { upstream.headerFields[.contentLength] = String(length) }
            default:
                break
            }
        } else if head.framing != .none {
            // RFC 9110 §15.4: a redirect that turns the request into a GET drops the content and the
            // fields that describe it.
            for name in [HTTPField.Name.contentLength, .contentType, .contentEncoding, .contentLanguage, .contentLocation] {
                upstream.headerFields[name] = nil
            }
        }
        if let upgradeProtocol {
            // Hop-by-hop, so removed above; asked for again on this hop.
            upstream.headerFields[.connection] = "upgrade"
            upstream.headerFields[.upgrade] = upgradeProtocol
        }
        if let validators {
            // Validating a stored response (RFC 9111 §4.3.1): its validators replace the
            // client's own; the client's conditions are answered from the result.
            upstream.headerFields[.ifNoneMatch] = nil
            upstream.headerFields[.ifModifiedSince] = nil
            upstream.headerFields.append(contentsOf: validators)
        }
        if stripCredentials {
            // Credentials meant for the first host are not sent to another one.
            upstream.headerFields[.authorization] = nil
            upstream.headerFields[.cookie] = nil
        }
        for adapter in session.adapters { adapter.adapt(&upstream) }
        if session.configuration.addForwarded {
            // RFC 7239 §4: a proxy appends its element, after any the client sent.
            upstream.headerFields.append(HTTPField(name: ForwardedElement.name, value: ForwardedElement.value(
                clientAddress: records.clientAddress, scheme: origin.scheme)))
        }
        if let parent = origin.parent, !origin.isSecure {
            // Through a parent, a plain request names its whole URL (RFC 9112 §3.2.2), and carries
            // the parent's credentials; https goes through a CONNECT instead (the opener's).
            upstream.target = origin.url(path: path)
            if let authorization = parent.authorization {
                upstream.headerFields[.proxyAuthorization] = authorization
            } else if session.authenticator == nil, let own = head.headerFields[.proxyAuthorization] {
                // Lookout asks for no credentials and the rule gives none: the client's are for the parent.
                upstream.headerFields[.proxyAuthorization] = own
            }
        }
        var ruleName: String?
        var changes = HeaderChanges()
        if let match = session.configuration.headerRules.match(for: origin.ruleKey), !match.rule.request.isEmpty {
            ruleName = match.rule.name
            changes = match.rule.request.apply(to: &upstream.headerFields)
        }
        session.emit(requestContext, RequestDidAdaptRequest(upstreamTarget: upstream.target, headerFields: upstream.headerFields,
                                                            rule: ruleName, changes: changes))
        return UpstreamRequest(origin: origin, method: method, url: url, target: upstream.target,
                               fields: upstream.headerFields, bodyIsChunked: chunked, hasBody: withBody,
                               asksForUpgrade: upgradeProtocol != nil, acceptsTrailers: acceptsTrailers)
    }

    private func startAttempt() {
        summary.attempts += 1
        let task = UpstreamTask(id: session.makeTaskID(), attempt: summary.attempts, request: request, requestID: id,
                                connectionID: records.connectionID, session: session, context: context)
        self.task = task
        taskTakesBody = false
        replaySent = 0
        cache?.attemptWillStart()
        context.taskMap.add(task, for: self)
        session.delegate.upstream(EventContext(connectionID: records.connectionID, requestID: id, taskID: task.id),
                                  didCreateFor: request.origin, attempt: summary.attempts)
        task.start()
    }

    // MARK: - Request body (called by the client connection)

    /// False while the request is complete or the upstream (or the upload pacing) cannot take more yet.
    var acceptsRequestBody: Bool {
        !requestEnded && !bodyPausedForUpstream && !finished && !requestEndWaitsForPacing && !(uploadPacer?.isHolding ?? false)
    }

    func clientSentBody(_ bytes: UnsafeRawBufferPointer) {
        guard !finished else { return }
        if let uploadPacer {
            // What the rate does not allow yet waits in the pacer; `acceptsRequestBody` stops the client meanwhile.
            _ = uploadPacer.send(bytes)
            return
        }
        takeBody(bytes)
    }

    /// Request body bytes on their way upstream (after any upload pacing).
    private func takeBody(_ bytes: UnsafeRawBufferPointer) {
        guard !finished else { return }
        if let capture, let failure = capture.requestBytes(bytes) { session.emit(requestContext, failure) }
        requestBodyBytes += UInt64(bytes.count)
        let limit = session.configuration.maxRequestBodyBytes
        if limit > 0 && requestBodyBytes > limit {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        if bodyDropped { return }
        if let replay {
            // A task that has had everything stored takes the live bytes; the store keeps its copy
            // for a later attempt without reading it back now.
            let caughtUp = taskTakesBody && replaySent == replay.count && earlyBody.isEmpty
            if replay.append(bytes) {
                if caughtUp, let task {
                    replaySent = replay.count
                    if !task.sendBody(bytes) { bodyPausedForUpstream = true }
                } else {
                    feedTask()
                    if replay.count - replaySent >= 64 * 1024 { bodyPausedForUpstream = true }
                }
                return
            }
        }
        if taskTakesBody, let task, earlyBody.isEmpty, replay == nil {
            if !task.sendBody(bytes) { bodyPausedForUpstream = true }
        } else {
            // The upstream is still connecting (or stored bytes go first): hold one read's worth,
            // then stop reading.
            earlyBody.append(contentsOf: bytes)
            if earlyBody.count >= 64 * 1024 { bodyPausedForUpstream = true }
            feedTask()
        }
    }

    func clientFinishedBody(trailers: HTTPFields?) {
        // A bodiless request was already complete at its head.
        guard !finished, head.framing != .none else { return }
        if let uploadPacer, uploadPacer.isHolding {
            requestEndWaitsForPacing = true
            uploadPacer.whenFlushed { [unowned self] in
                requestEndWaitsForPacing = false
                requestBodyDidEnd(trailers: trailers)
            }
            return
        }
        requestBodyDidEnd(trailers: trailers)
    }

    private func requestBodyDidEnd(trailers: HTTPFields?) {
        guard !finished else { return }
        capture?.requestEnded()
        requestEnded = true
        requestTrailers = trailers
        feedTask()
    }

    func clientSentInvalidBody(_ error: ProxyError) {
        fail(error)
    }

    func clientDidDrain() {
        if let shaped, !shaped.clientDidDrain() { return }
        resumeResponse()
    }

    /// The client (and the response shaping) can take more of the response: whoever produces it goes on.
    private func resumeResponse() {
        if fileBody != nil {
            sendFileBody()
            return
        }
        if follower != nil {
            advanceFollower(afterDrain: true)
            return
        }
        if storedBody != nil {
            sendStoredBody()
            return
        }
        task?.resumeReading()
    }

    func clientDidClose(_ error: ProxyError) {
        guard !finished else { return }
        stopTask()
        shaped?.cancel()
        finish(error: error, keepAlive: false)
    }

    func abort(_ error: ProxyError) {
        guard !finished else { return }
        stopTask()
        shaped?.cancel()
        if !responseHeadSent {
            client.writeError(error, requestID: id)
            summary.status = error.status
        }
        finish(error: error, keepAlive: false)
    }

    // MARK: - Operator

    /// What an operator sees of this exchange now; nil once it has finished.
    func inFlightSnapshot(at now: Instant) -> InFlightExchange? {
        guard !finished else { return nil }
        var snapshot = summary
        snapshot.end = now
        let phase: String
        if let task {
            snapshot.upstream = task.metrics
            phase = task.metrics.currentPhase
        } else if waitingForNextAttempt {
            phase = "retry_wait"
        } else if waitingForLatency {
            phase = "shaping_latency"
        } else if shaped?.isHolding ?? false {
            phase = "shaping_pace"
        } else if fileBody != nil {
            phase = "map_local"
        } else if follower != nil {
            phase = "collapsed"
        } else if storedBody != nil {
            phase = "stored_body"
        } else {
            phase = "starting"
        }
        return InFlightExchange(summary: snapshot, phase: phase)
    }

    /// Ends the exchange for an operator: an error response if nothing was sent yet, otherwise
    /// the bytes relayed so far and a reset. The running attempt's upstream connection is closed.
    func cancel(_ error: ProxyError) {
        shaped?.cancel()
        fail(error)
    }

    /// Sends the current task what it has not had yet: kept bytes first, then what waited, then the
    /// end of the body. Pauses the client while the upstream is backed up.
    private func feedTask() {
        guard taskTakesBody, let task else { return }
        if bodyDropped {
            // The hop is a bodiless GET now: its request is complete, whatever the client still sends.
            task.finishBody(trailers: nil)
            return
        }
        if let replay {
            while replaySent < replay.count {
                var accepted = true
                let sent = replay.read(from: replaySent, maximum: 64 * 1024) { accepted = task.sendBody($0) }
                guard sent > 0 else { break }
                replaySent += UInt64(sent)
                if !accepted {
                    bodyPausedForUpstream = true
                    return
                }
            }
            // Past its limit the body can no longer be sent again: stream the rest.
            if replay.isOverLimit { self.replay = nil }
        }
        if !earlyBody.isEmpty {
            let body = earlyBody
            earlyBody = []
            if !body.withUnsafeBytes({ task.sendBody($0) }) {
                bodyPausedForUpstream = true
                return
            }
        }
        if requestEnded { task.finishBody(trailers: requestTrailers) }
        if bodyPausedForUpstream {
            bodyPausedForUpstream = false
            resumeClientInput()
        }
    }

    /// The client sent `Proxy-Authorization` of its own (meant for a parent when Lookout asks for none).
    var clientSentProxyAuthorization: Bool { head.headerFields[.proxyAuthorization] != nil }

    /// Asks the connection for more input on the next turn of the loop, never on this stack.
    private func resumeClientInput() {
        context.loop.execute { [weak self] in
            guard let self, !finished else { return }
            // The pacer sends what it held first; its timer asks for more once the rate allows.
            if let uploadPacer, !uploadPacer.sinkDidDrain() { return }
            delegate.exchangeCanTakeInput()
        }
    }

    // MARK: - Upstream callbacks (from SessionDelegate)

    /// The upstream head is on its way: send what body is waiting, then let the client continue.
    func taskIsReadyForBody() {
        taskTakesBody = true
        let wasPaused = bodyPausedForUpstream
        feedTask()
        if !requestEnded && !bodyPausedForUpstream && !wasPaused && !bodyDropped { resumeClientInput() }
    }

    func taskDidDrainRequestBody() {
        feedTask()
    }

    /// 1xx from the origin (RFC 9110 §15.2): forwarded to HTTP/1.1 and HTTP/2 clients, dropped for 1.0 ones.
    func taskDidReceiveInformational(_ response: ResponseHead) {
        guard head.version != .http1_0, response.status != 101 else { return }
        var fields = response.headerFields
        HopByHopHeaders.remove(from: &fields)
        client.writeInformational(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields)
    }

    /// A final response head, with what the policies decided about it. Returns false when the
    /// response is held back (the task stops relaying it, and its completion starts what comes next).
    func taskDidReceiveResponse(_ response: consuming ResponseHead, plan: ResponsePlan) -> Bool {
        guard case .forward(let location) = plan else {
            pendingPlan = plan
            return false
        }
        // What is read from the origin's own fields, before they are moved out of the head: with
        // the head the only other owner, adding Via and the rest below would otherwise copy all
        // of them first (copy-on-write), once per response.
        let offeredUpgrade = response.status == 101 ? response.headerFields[.upgrade] : nil
        let chunkedCoding: String? = if case .chunked = response.framing, head.version != .http1_0 {
            TransferCoding.canonicalField(response.headerFields)
        } else {
            nil
        }
        var fields = response.headerFields
        response.headerFields = HTTPFields()
        HopByHopHeaders.remove(from: &fields)
        var cacheStatus: String?
        if let cache, summary.redirects == 0, response.status != 101 {
            let (action, records) = cache.responseArrived(status: response.status, reasonPhrase: response.reasonPhrase,
                                                          fields: fields, framing: response.framing)
            for record in records { emit(record) }
            switch action {
            case .answer(let answer):
                pendingAnswer = answer
                return false
            case .relay(let status):
                cacheStatus = status
            }
        }
        summary.status = response.status
        if response.status == 101 {
            // The origin accepted the switch (the task only passes a 101 on when one was asked
            // for): the client gets the 101 with the switch named, then the bytes both ways.
            fields[.connection] = "upgrade"
            if let accepted = offeredUpgrade {
                fields[.upgrade] = accepted
                acceptedUpgrade = accepted
            }
            clientFraming = .none
            keepClientAlive = false
        } else {
            prepareFraming(for: response, chunkedCoding: chunkedCoding, fields: &fields)
        }
        if let location { fields[.location] = location }
        if let cacheStatus { fields.append(HTTPField(name: .cacheStatus, value: cacheStatus)) }
        sendResponseHead(status: response.status, reasonPhrase: response.reasonPhrase, fields: &fields,
                         framing: clientFraming)
        return true
    }

    /// Lookout's own fields (Via, the host's header rule), then the head to the client.
    private func sendResponseHead(status: Int, reasonPhrase: String, fields: inout HTTPFields, framing: ClientFraming) {
        if session.configuration.addVia { fields.append(HTTPField(name: .via, value: ViaHeaderAdapter.value)) }
        if let match = session.configuration.headerRules.match(for: request.origin.ruleKey), !match.rule.response.isEmpty {
            let changes = match.rule.response.apply(to: &fields)
            session.emit(requestContext, RequestDidAdaptResponse(rule: match.rule.name, changes: changes))
        }
        client.writeHead(status: status, reasonPhrase: reasonPhrase, fields: fields, framing: framing)
        responseHeadSent = true
        if let rule = shapingRule, rule.stall > 0 {
            recordFault(.stall(milliseconds: rule.stall * 1000), rule: rule)
        }
        summary.responseHeaders = fields
        summary.requestHeaders = head.headerFields
    }

    /// Response body bytes on their way to the client, for the capture.
    private func captured(_ bytes: UnsafeRawBufferPointer) {
        if let capture, let failure = capture.responseBytes(bytes) { session.emit(requestContext, failure) }
    }

    private func emit(_ record: any EventKind) {
        func post<Kind: EventKind>(_ kind: Kind) { session.emit(requestContext, kind) }
        post(record)
    }

    // MARK: - Map and shaping

    /// Applies the `map` rule that takes the request, if any: another origin for map remote, a
    /// file for map local (answered in `proceed`). False when it ended the exchange (a refused downgrade).
    private func applyMap() -> Bool {
        let origin = request.origin
        guard let match = session.configuration.mapRules.match(isSecure: origin.isSecure, host: origin.host,
                                                               port: origin.port, path: upstreamPath) else { return true }
        switch match {
        case .local(let rule):
            mapLocal = rule
            summary.mappedFrom = summary.url
            summary.url = "file://" + rule.file
            bodyDropped = true  // read and dropped: nothing goes upstream
            return true
        case .remote(let rule):
            let path = rule.targetPath(for: upstreamPath)
            let key = HostRuleKey(rule.toHost)
            let target = Origin(host: rule.toHost, port: rule.toPort, isSecure: rule.toIsSecure,
                                parent: session.parentProxy(for: key), ruleKey: key)
            let mappedURL = target.url(path: path)
            session.emit(requestContext, RequestDidMapRemote(from: rule.from.text, to: rule.toText, url: summary.url,
                                                             mappedURL: mappedURL, preserveHost: rule.preserveHost))
            if origin.isSecure && !target.isSecure && !rule.allowDowngrade {
                fail(.mapFailed(reason: .downgradeRefused(from: summary.url, to: mappedURL)))
                return false
            }
            if rule.preserveHost { hostOverride = origin.hostFieldValue }
            summary.mappedFrom = summary.url
            summary.url = mappedURL
            upstreamPath = path
            firstHost = target.host
            request = UpstreamRequest(origin: target, method: head.method, url: mappedURL, target: path, fields: [:],
                                      bodyIsChunked: false, hasBody: head.framing != .none, asksForUpgrade: false,
                                      acceptsTrailers: false)
            return true
        }
    }

    /// Sets the host's shaping rule up for this exchange; returns the latency drawn for it (seconds).
    private func applyShaping(_ rule: ShapingRule) -> Double {
        shapingRule = rule
        let latency = rule.drawLatency()
        let applied = rule.applied(latency: latency)
        summary.shaping = applied
        session.emit(requestContext, RequestDidShape(shaping: applied))
        if rule.shapesResponse {
            let writer = ShapedResponseWriter(base: client, rule: rule, loop: context.loop, delegate: self)
            shaped = writer
            client = writer
        }
        if rule.uploadKbps > 0, head.framing != .none {
            let pacer = PacedSender(loop: context.loop, bytesPerSecond: rule.uploadBytesPerSecond) { [unowned self] bytes in
                takeBody(bytes)
                return !bodyPausedForUpstream && !finished
            }
            pacer.onReady = { [unowned self] in
                guard !finished else { return }
                delegate.exchangeCanTakeInput()
            }
            uploadPacer = pacer
        }
        return latency
    }

    /// A map-local answer: the rule's status, the file's type and length, then its bytes.
    private func answerFromFile(_ rule: MapLocalRule) {
        let sender: LocalFileSender
        switch LocalFileSender.open(rule.file) {
        case .failure(let error):
            fail(.mapFailed(reason: .localFileUnreadable(file: rule.file, detail: error.message)))
            return
        case .success(let opened):
            sender = opened
        }
        session.emit(requestContext, RequestDidMapLocal(from: rule.from.text, file: rule.file, status: rule.status,
                                                        contentType: rule.contentType, bytes: sender.size))
        summary.status = rule.status
        var fields = HTTPFields()
        fields[.contentType] = rule.contentType
        fields[.contentLength] = String(sender.size)
        let hasBody = sender.size > 0 && head.method != .head && rule.status != 204 && rule.status != 304
        clientFraming = hasBody ? .contentLength : .none
        decideKeepAlive(possible: requestEnded, fields: &fields)
        sendResponseHead(status: rule.status, reasonPhrase: ReasonPhrase.standard(for: rule.status), fields: &fields,
                         framing: clientFraming)
        guard hasBody else {
            client.writeEnd(trailers: nil)
            finish(error: nil, keepAlive: keepClientAlive)
            return
        }
        fileBody = sender
        sendFileBody()
    }

    /// Sends the map-local file until the client is backed up (`clientDidDrain` resumes).
    private func sendFileBody() {
        guard let sender = fileBody, !finished, let rule = mapLocal else { return }
        switch sender.send(to: client, observe: { [self] in captured($0) }) {
        case .waiting:
            return
        case .done:
            fileBody = nil
            client.writeEnd(trailers: nil)
            capture?.responseEnded()
            finish(error: nil, keepAlive: keepClientAlive)
        case .failed:
            fileBody = nil
            // The head announced the length: a short body must reach the client as a broken one.
            finish(error: .mapFailed(reason: .localFileUnreadable(file: rule.file, detail: "it shrank while being sent")),
                   keepAlive: false, truncate: true)
        }
    }

    // MARK: - Answering from the cache

    /// Sends a stored response (a hit, a revalidated or a stale-if-error one) and ends the exchange.
    private func answerFromStore(_ answer: StoredAnswer) {
        summary.status = answer.status
        var fields = answer.fields
        decideKeepAlive(possible: requestEnded, fields: &fields)
        clientFraming = .contentLength
        sendResponseHead(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: &fields, framing: clientFraming)
        guard !answer.segments.isEmpty else {
            client.writeEnd(trailers: nil)
            finish(error: nil, keepAlive: keepClientAlive)
            return
        }
        storedBody = StoredBodySender(object: answer.object, segments: answer.segments)
        sendStoredBody()
    }

    /// Sends the stored body until the client is backed up (`clientDidDrain` resumes).
    private func sendStoredBody() {
        guard let sender = storedBody, !finished else { return }
        switch sender.send(to: client, observe: { [self] in captured($0) }) {
        case .waiting:
            return
        case .done:
            storedBody = nil
            client.writeEnd(trailers: nil)
            finish(error: nil, keepAlive: keepClientAlive)
        case .failed:
            storedBody = nil
            // The head went out: the client must see a broken transfer, never a short "complete" one.
            finish(error: .sessionUnavailable(reason: .cacheReadFailed(url: summary.url)), keepAlive: false, truncate: true)
        }
    }

    /// How the response body goes to the client, and whether the client connection stays open.
    /// `chunkedCoding` is the `Transfer-Encoding` a chunked response goes on with, from the
    /// origin's own fields (read only when the client takes chunks).
    private func prepareFraming(for response: ResponseHead, chunkedCoding: String?, fields: inout HTTPFields) {
        switch response.framing {
        case .none:
            clientFraming = .none
        case .contentLength(let length):
            // An empty body is no body: an HTTP/2 client gets END_STREAM on the HEADERS frame,
            // which is how a gRPC "Trailers-Only" answer must arrive.
            clientFraming = length == 0 ? .none : .contentLength
            if response.contentLengthIsList { fields[.contentLength] = String(length) }
        case .chunked where head.version != .http1_0:
            clientFraming = .chunked
            fields[.transferEncoding] = chunkedCoding ?? "chunked"
        case .chunked, .untilClose:
            // An HTTP/1.0 client cannot take chunks, and a close-delimited body can only be relayed as one.
            clientFraming = .untilClose
        }
        // Until the whole request was read (the origin answered early, e.g. 413) the rest of its
        // body cannot be delimited any more: the connection ends with the exchange.
        decideKeepAlive(possible: clientFraming != .untilClose && requestEnded, fields: &fields)
    }

    /// Whether the client connection stays open after this response — it asked to, the response
    /// allows it (`possible`), nobody is closing it — and the response's `Connection` field saying so.
    private func decideKeepAlive(possible: Bool, fields: inout HTTPFields) {
        keepClientAlive = possible && head.keepAlive && !delegate.isClosingAfterExchange && !session.isShuttingDown
        if keepClientAlive {
            if head.version == .http1_0 { fields[.connection] = "keep-alive" }
        } else {
            fields[.connection] = "close"
        }
    }

    /// Relays body bytes; false asks the task to stop reading until the client drains.
    func taskDidReceiveData(_ bytes: UnsafeRawBufferPointer) -> Bool {
        captured(bytes)
        if let cache, let record = cache.relayed(bytes) { emit(record) }
        if clientFraming == .none { return true }
        return client.writeBody(bytes)
    }

    func taskDidFinishResponse(trailers: HTTPFields?) {
        var fields = trailers ?? HTTPFields()
        HopByHopHeaders.remove(from: &fields)
        client.writeEnd(trailers: fields.isEmpty ? nil : fields)
        if clientFraming == .untilClose { keepClientAlive = false }
        capture?.responseEnded()
        if let record = cache?.responseEnded() { emit(record) }
    }

    /// The attempt is over (metrics and completion delivered): switch, go on, retry, or finish.
    func taskDidComplete(_ task: UpstreamTask, metrics: consuming TransactionMetrics, error: ProxyError?,
                         retry: RetryDecision) {
        record(consume metrics)
        self.task = nil
        if error == nil, let switched = task.takeSwitchedStream() {
            switchProtocols(task: task, upstream: switched.stream, upstreamLeftover: switched.leftover)
            return
        }
        guard !finished else { return }
        if let answer = pendingAnswer {
            pendingAnswer = nil
            answerFromStore(answer)
            return
        }
        if let plan = pendingPlan {
            pendingPlan = nil
            proceed(with: plan)
            return
        }
        guard let error else {
            finish(error: nil, keepAlive: keepClientAlive)
            return
        }
        if case .retry(let delay, _, let counts) = retry, !responseHeadSent {
            proceed(with: .retry(delay: delay, countsAgainstRule: counts))
            return
        }
        fail(error)
    }

    // MARK: - Further attempts

    private func proceed(with plan: ResponsePlan) {
        switch plan {
        case .forward:
            preconditionFailure("a forwarded response is not held back")
        case .fail(let error):
            fail(error)
        case .retry(let delay, let countsAgainstRule):
            if countsAgainstRule { retriesByRule += 1 }
            nextAttempt(after: delay)
        case .follow(let url, let status):
            follow(url, status: status)
        }
    }

    /// Starts the next attempt after `delay` seconds (on the next turn of the loop at the soonest).
    private func nextAttempt(after delay: Double) {
        // Dispatch's own timer, not the loop's 50 ms deadline list: backoffs are short and exact.
        waitingForNextAttempt = true
        context.loop.execute(after: max(delay, 0)) { [weak self] in
            guard let self, !finished, waitingForNextAttempt else { return }
            waitingForNextAttempt = false
            startAttempt()
        }
    }

    /// The next hop of a followed redirect (RFC 9110 §15.4): same trust rules, pool and interception
    /// as a first request, the method as the status says, credentials only to the first host.
    private func follow(_ url: String, status: Int) {
        guard let target = RedirectPolicy.parse(url) else {
            preconditionFailure("the redirect policy follows only absolute http(s) URLs")
        }
        summary.redirects += 1
        visitedURLs.insert(request.url)
        hostOverride = nil
        let method = RedirectStatus.method(after: status, from: request.method)
        let keepsBody = request.hasBody && method == request.method
        if request.hasBody && !keepsBody {
            bodyDropped = true
            replay = nil
            earlyBody = []
            if bodyPausedForUpstream {
                bodyPausedForUpstream = false
                resumeClientInput()
            }
        }
        let key = HostRuleKey(target.host)
        let origin = Origin(host: target.host, port: target.port, isSecure: target.scheme == "https",
                            parent: session.parentProxy(for: key), ruleKey: key)
        request = makeUpstreamRequest(method: method, origin: origin, path: target.path, url: url,
                                      withBody: keepsBody, stripCredentials: origin.host != firstHost)
        startAttempt()
    }

    /// What the redirect policy needs to know.
    func redirectContext(status: Int, location: String) -> RedirectContext {
        RedirectContext(status: status, location: location, requestURL: request.url, method: request.method,
                        redirectsFollowed: summary.redirects, visitedURLs: visitedURLs.union([request.url]),
                        hasBody: request.hasBody, bodyIsReplayable: bodyIsReplayable)
    }

    /// What the retry policy needs to know; nil once bytes of a response reached the client.
    func retryContext(for task: UpstreamTask, outcome: AttemptOutcome) -> RetryContext? {
        guard !responseHeadSent, !finished else { return nil }
        return RetryContext(method: request.method, host: request.origin.host, attempt: task.attempt,
                            retriesByRule: retriesByRule, outcome: outcome,
                            usedReusedConnection: task.metrics.isReusedConnection,
                            receivedResponseBytes: task.receivedResponseBytes, bodyIsReplayable: bodyIsReplayable,
                            now: Double(Instant.now().unixMicroseconds) / 1e6)
    }

    private var bodyIsReplayable: Bool {
        !request.hasBody || (replay.map { !$0.isOverLimit } ?? false)
    }

    /// Every transaction so far plus `current`, for `task.didGatherMetrics`.
    func metrics(adding current: TransactionMetrics) -> TaskMetrics {
        var metrics = TaskMetrics(taskStart: summary.start)
        metrics.transactions = (transactions.isEmpty ? summary.upstream.map { [$0] } ?? [] : transactions) + [current]
        metrics.redirectCount = summary.redirects
        metrics.taskEnd = .now()
        return metrics
    }

    private func record(_ metrics: consuming TransactionMetrics) {
        if let previous = summary.upstream {
            if transactions.isEmpty { transactions.append(previous) }
            transactions.append(copy metrics)  // a further attempt: kept in both
        }
        summary.upstream = metrics
    }

    /// Stops the running attempt (its events are still written) and keeps its transaction.
    private func stopTask() {
        waitingForNextAttempt = false
        guard let task else { return }
        self.task = nil
        task.cancel()
        record(task.metrics)
    }

    // MARK: - Protocol switch

    /// After a 101 the exchange becomes a tunnel over the same two connections; the tunnel
    /// writes this exchange's summary when both sides are done.
    private func switchProtocols(task: UpstreamTask, upstream: ByteStream, upstreamLeftover: [UInt8]) {
        finished = true
        closeCacheAndCapture()
        guard let upgradeProtocol, let stream = client.switchableStream else { preconditionFailure("a switch nobody asked for") }
        let tunnel = Tunnel(head: head, summary: summary, upgrade: acceptedUpgrade ?? upgradeProtocol,
                            origin: request.origin, taskID: task.id, metrics: task.metrics, client: stream,
                            delegate: delegate, session: session, context: context, records: records,
                            shapingRule: shapingRule)
        delegate.exchangeDidSwitchProtocols(to: tunnel)
        tunnel.adopt(upstream, upstreamLeftover: upstreamLeftover)
    }

    // MARK: - Finishing

    /// Stops what the cache and the capture still have open (a half-written object or body file,
    /// a fill followed) and writes their part of the summary.
    private func closeCacheAndCapture() {
        storedBody = nil
        follower?.stop()
        follower = nil
        if let capture {
            capture.finish()
            summary.capture = capture.summary
        }
        if let cache {
            cache.abandon()
            summary.cache = cache.summary
        }
    }

    /// Ends the exchange with `error`: an error response if nothing was sent yet, otherwise a
    /// truncated response (the connection closes without completing the body).
    private func fail(_ error: ProxyError) {
        guard !finished else { return }
        stopTask()
        if !responseHeadSent, case .upstreamFailed = error, let cache, let (answer, record) = cache.attemptFailed() {
            // RFC 5861 §4: the stale response stands in for the failed validation.
            session.emit(requestContext, record)
            answerFromStore(answer)
            return
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

    private func finish(error: ProxyError?, keepAlive: Bool, truncate: Bool = false) {
        guard !finished else { return }
        if let bytes = shaped?.resetPoint, !resetInjected {
            // The response ended upstream before the reset was heard of: the client still gets it.
            finish(error: injectReset(after: bytes), keepAlive: false, truncate: true)
            return
        }
        if let shaped, shaped.isHolding {
            // The paced bytes go out first; the exchange ends (or breaks off) behind them.
            shaped.whenFlushed { [weak self] in self?.finish(error: error, keepAlive: keepAlive, truncate: truncate) }
            return
        }
        finished = true
        uploadPacer?.cancel()
        fileBody = nil
        waitingForNextAttempt = false
        replay = nil
        closeCacheAndCapture()
        summary.error = error
        summary.transactions = transactions
        if summary.redirects > 0 { summary.finalURL = request.url }
        session.exchangesInFlight.subtract(1, ordering: .relaxed)
        records.finish(takeSummary())
        if truncate {
            // The bytes relayed so far still go out, then a reset: the client must see a failed
            // transfer, never a short "complete" one.
            delegate.exchangeDidBreakOff()
            return
        }
        delegate.exchangeDidFinish(keepAlive: keepAlive)
    }
}

extension Exchange {
    /// The summary, moved out for its record (a copy would retain and release each of its strings
    /// and arrays). The finished exchange keeps what identifies it (ids, client, method, URL,
    /// version: work started as it finishes, such as a background revalidation, reads the URL).
    fileprivate func takeSummary() -> ExchangeSummary {
        var ended = ExchangeSummary(requestID: summary.requestID, connectionID: summary.connectionID,
                                    clientAddress: summary.clientAddress, kind: summary.kind, method: summary.method,
                                    url: summary.url, httpVersion: summary.httpVersion, start: summary.start)
        swap(&ended, &summary)
        return ended
    }
}

extension Exchange: ShapedResponseWriterDelegate {
    func shapedWriterCanTakeMore() {
        guard !finished else { return }
        resumeResponse()
    }

    func shapedWriterReachedResetPoint(after bytes: UInt64) {
        guard !finished, !resetInjected else { return }
        fail(injectReset(after: bytes))
    }

    /// `faults.reset_after_bytes` hit: its record, and the error the exchange breaks off with.
    fileprivate func injectReset(after bytes: UInt64) -> ProxyError {
        resetInjected = true
        let rule = shapingRule?.name ?? ""
        recordFault(.resetAfterBytes(bytes), rule: shapingRule)
        return .injectedFault(reason: .resetAfterBytes(bytes, rule: rule))
    }

    /// An injected fault's record and its name in the summary's `shaping.faults`.
    fileprivate func recordFault(_ fault: RequestDidInjectFault.Fault, rule: ShapingRule?) {
        summary.shaping?.faults.append(fault.name)
        session.emit(requestContext, RequestDidInjectFault(rule: rule?.name ?? "", fault: fault))
    }
}
