import HTTPTypes
import LookoutHTTP
import LookoutIO

/// One forwarded HTTP exchange: the client's request, the upstream task(s) that serve it, and the
/// response relayed back. Owns the framing decisions for both directions (RFC 9112 §6, §7).
final class ProxyRequest: TaskMapIdentifiable, @unchecked Sendable {  // confined to the client connection's loop queue
    static let idHeader = HTTPField.Name("X-Lookout-Id")!
    /// HTTPTypes models Host as the :authority pseudo-field; on the HTTP/1.1 wire it is a plain field.
    static let hostHeader = HTTPField.Name("Host")!

    /// How the response body is framed toward the client.
    private enum ClientFraming {
        case none, contentLength, chunked, untilClose
    }

    let id: UInt64
    unowned let client: ClientConnection
    let session: Session
    let head: RequestHead
    let origin: Origin
    /// The origin-form target sent upstream.
    private let upstreamPath: String
    /// The protocol switch asked for (`Upgrade` with `Connection: upgrade`) that goes upstream,
    /// e.g. "websocket"; nil when none was asked for or it is not relayed (see `relayedUpgrade`).
    let upgradeProtocol: String?
    /// The protocol the origin's 101 named.
    private var acceptedUpgrade: String?
    private(set) var summary: ExchangeSummary
    private var context: LoopContext { client.context }

    /// The request head as it goes upstream, serialized once (retries resend it).
    private(set) var upstreamHead: [UInt8] = []
    private(set) var upstreamBodyIsChunked = false
    private var task: UpstreamTask?

    // Request body, client → upstream.
    private var requestEnded = false
    private var requestTrailers: HTTPFields?
    private var bodyPausedForUpstream = false
    private var earlyBody: [UInt8] = []
    private var requestBodyBytes: UInt64 = 0
    private var taskTakesBody = false

    // Response, upstream → client.
    private var responseHeadSent = false
    private var clientFraming = ClientFraming.none
    private var keepClientAlive = true
    private var finished = false

    init(id: UInt64, client: ClientConnection, head: RequestHead, origin: Origin, path: String,
         url: String, kind: ExchangeSummary.Kind) {
        self.id = id
        self.client = client
        self.session = client.session
        self.head = head
        self.origin = origin
        let start = Instant.now()
        self.summary = ExchangeSummary(requestID: id, connectionID: client.id, clientAddress: client.clientAddress,
                                       kind: kind, method: head.method.rawValue, url: url,
                                       httpVersion: head.version.description, start: start)
        self.upstreamPath = path
        self.upgradeProtocol = Self.relayedUpgrade(head)
    }

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

    // MARK: - Start

    func start() {
        session.exchangesInFlight.add(1, ordering: .relaxed)
        client.emitCreated(head, requestID: id, url: summary.url)
        session.emit(.lifecycle) { .didAuthorize(EventContext(connectionID: client.id, requestID: id)) }
        let limit = session.configuration.maxRequestBodyBytes
        if limit > 0, case .contentLength(let length) = head.framing, length > limit {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        var upstream = UpstreamRequestHead(method: head.method, target: upstreamPath,
                                           authority: origin.authority, headerFields: head.headerFields)
        // RFC 9112 §3.2.2: a proxy replaces Host with the authority of the absolute-form target.
        upstream.headerFields[ProxyRequest.hostHeader] = origin.hostFieldValue
        HopByHopHeaders.remove(from: &upstream.headerFields)
        if let upgradeProtocol {
            // Hop-by-hop, so removed above; asked for again on this hop.
            upstream.headerFields[.connection] = "upgrade"
            upstream.headerFields[.upgrade] = upgradeProtocol
        }
        if head.framing == .chunked {
            // Re-chunked hop by hop, but codings before "chunked" (e.g. gzip) describe the body itself.
            upstream.headerFields[.transferEncoding] = Self.transferCodings(head.headerFields)
            upstreamBodyIsChunked = true
        }
        for adapter in session.adapters { adapter.adapt(&upstream) }
        session.emit(.lifecycle) {
            .didAdaptRequest(EventContext(connectionID: client.id, requestID: id),
                             upstreamTarget: upstream.target, headerFields: upstream.headerFields)
        }
        upstreamHead = HTTPSerializer.requestHead(method: upstream.method, target: upstream.target,
                                                  version: .http1_1, headerFields: upstream.headerFields)
        if head.framing == .none { requestEnded = true }
        startTask(attempt: 1)
    }

    /// The Transfer-Encoding value as received, ending in "chunked" (the parser guarantees it).
    private static func transferCodings(_ fields: HTTPFields) -> String {
        fields[values: .transferEncoding].joined(separator: ", ")
    }


    private func startTask(attempt: Int) {
        let task = UpstreamTask(id: session.makeTaskID(), attempt: attempt, request: self, loop: client.connection.loop)
        self.task = task
        taskTakesBody = false
        summary.attempts = attempt
        context.taskMap.add(task, for: self)
        session.delegate.taskDidCreate(task)
        task.start()
    }

    // MARK: - Request body (called by the client connection)

    /// False while the request is complete or the upstream cannot take more yet.
    var acceptsRequestBody: Bool { !requestEnded && !bodyPausedForUpstream && !finished }

    func clientSentBody(_ bytes: UnsafeRawBufferPointer) {
        guard !finished else { return }
        requestBodyBytes += UInt64(bytes.count)
        let limit = session.configuration.maxRequestBodyBytes
        if limit > 0 && requestBodyBytes > limit {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        if taskTakesBody, let task {
            if !task.sendBody(bytes) { bodyPausedForUpstream = true }
        } else {
            // The upstream is still connecting: hold one read's worth, then stop reading.
            earlyBody.append(contentsOf: bytes)
            if earlyBody.count >= 64 * 1024 { bodyPausedForUpstream = true }
        }
    }

    func clientFinishedBody(trailers: HTTPFields?) {
        // A bodiless request was already complete at its head.
        guard !finished, head.framing != .none else { return }
        requestEnded = true
        requestTrailers = trailers
        if taskTakesBody, let task { task.finishBody(trailers: trailers) }
    }

    func clientSentInvalidBody(_ error: ProxyError) {
        fail(error)
    }

    func clientDidDrain() {
        task?.resumeReading()
    }

    func clientDidClose(_ error: ProxyError) {
        guard !finished else { return }
        if let task { task.cancel() }
        finish(error: error, keepAlive: false)
    }

    func abort(_ error: ProxyError) {
        guard !finished else { return }
        task?.cancel()
        if !responseHeadSent {
            client.connection.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: id))
            summary.status = error.status
        }
        finish(error: error, keepAlive: false)
    }

    // MARK: - Upstream callbacks (from SessionDelegate)

    /// The upstream head is on its way: send what body arrived early, then let the client continue.
    func taskIsReadyForBody(_ task: UpstreamTask) {
        taskTakesBody = true
        if !earlyBody.isEmpty {
            let body = earlyBody
            earlyBody = []
            body.withUnsafeBytes { _ = task.sendBody($0) }
        }
        if requestEnded { task.finishBody(trailers: requestTrailers) }
        bodyPausedForUpstream = false
        client.resumeInput()
    }

    func upstreamDidDrain() {
        guard bodyPausedForUpstream else { return }
        bodyPausedForUpstream = false
        client.resumeInput()
    }

    /// 1xx from the origin (RFC 9110 §15.2): forwarded to HTTP/1.1 clients, dropped for 1.0 ones.
    func taskDidReceiveInformational(_ response: ResponseHead) {
        guard head.version == .http1_1, response.status != 101 else { return }
        var fields = response.headerFields
        HopByHopHeaders.remove(from: &fields)
        client.connection.write(HTTPSerializer.responseHead(status: response.status, reasonPhrase: response.reasonPhrase,
                                                           version: .http1_1, headerFields: fields))
    }

    func taskDidReceiveResponse(_ response: ResponseHead) {
        summary.status = response.status
        var fields = response.headerFields
        HopByHopHeaders.remove(from: &fields)
        if response.status == 101 {
            // The origin accepted the switch (the task only passes a 101 on when one was asked
            // for): the client gets the 101 with the switch named, then the bytes both ways.
            fields[.connection] = "upgrade"
            if let accepted = response.headerFields[.upgrade] {
                fields[.upgrade] = accepted
                acceptedUpgrade = accepted
            }
            clientFraming = .none
            keepClientAlive = false
        } else {
            prepareFraming(for: response, fields: &fields)
        }
        if session.configuration.addVia { fields.append(HTTPField(name: .via, value: ViaHeaderAdapter.value)) }
        let bytes = HTTPSerializer.responseHead(status: response.status, reasonPhrase: response.reasonPhrase,
                                                version: .http1_1, headerFields: fields)
        client.connection.write(bytes)
        responseHeadSent = true
        summary.responseHeaders = fields
        summary.requestHeaders = head.headerFields
    }

    /// How the response body goes to the client, and whether the client connection stays open.
    private func prepareFraming(for response: ResponseHead, fields: inout HTTPFields) {
        keepClientAlive = head.keepAlive && !client.isClosingAfterExchange && !session.isShuttingDown
        switch response.framing {
        case .none:
            clientFraming = .none
        case .contentLength:
            clientFraming = .contentLength
        case .chunked where head.version == .http1_1:
            clientFraming = .chunked
            fields[.transferEncoding] = Self.transferCodings(response.headerFields)
        case .chunked, .untilClose:
            // An HTTP/1.0 client cannot take chunks, and a close-delimited body can only be relayed as one.
            clientFraming = .untilClose
            keepClientAlive = false
        }
        if !requestEnded {
            // The origin answered before the whole request was sent (e.g. 413): the rest of the
            // request body cannot be delimited any more, so this connection ends with the exchange.
            keepClientAlive = false
        }
        if keepClientAlive {
            if head.version == .http1_0 { fields[.connection] = "keep-alive" }
        } else {
            fields[.connection] = "close"
        }
    }

    /// Relays body bytes; false asks the task to stop reading until the client drains.
    func taskDidReceiveData(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let connection = client.connection
        switch clientFraming {
        case .chunked:
            connection.write(HTTPSerializer.chunkHeader(length: bytes.count))
            connection.write(bytes)
            return connection.write(HTTPSerializer.crlf)
        case .contentLength, .untilClose:
            return connection.write(bytes)
        case .none:
            return true
        }
    }

    func taskDidFinishResponse(trailers: HTTPFields?) {
        if clientFraming == .chunked {
            var fields = trailers ?? HTTPFields()
            HopByHopHeaders.remove(from: &fields)
            client.connection.write(HTTPSerializer.lastChunk(trailers: fields.isEmpty ? nil : fields))
        }
        if clientFraming == .untilClose { keepClientAlive = false }
    }

    /// The task is over (metrics and completion delivered). Retry, finish, or fail.
    func taskDidComplete(_ task: UpstreamTask, metrics: TransactionMetrics, error: ProxyError?) {
        summary.upstream = metrics
        self.task = nil
        if error == nil, let switched = task.takeSwitchedStream() {
            switchProtocols(task: task, upstream: switched.stream, upstreamLeftover: switched.leftover)
            return
        }
        guard let error else {
            finish(error: nil, keepAlive: keepClientAlive)
            return
        }
        guard !finished else { return }
        let retry = session.retrier.shouldRetry(RetryContext(
            method: head.method, attempt: task.attempt, error: error,
            usedReusedConnection: metrics.isReusedConnection, receivedResponseBytes: task.receivedResponseBytes,
            bodyIsReplayable: head.framing == .none))
        if case .retry(let reason) = retry, !responseHeadSent {
            session.emit(.lifecycle) {
                .requestIsRetrying(EventContext(connectionID: client.id, requestID: id), attempt: task.attempt + 1, reason: reason)
            }
            startTask(attempt: task.attempt + 1)
            return
        }
        fail(error)
    }

    // MARK: - Protocol switch

    /// After a 101 the exchange becomes a tunnel over the same two connections; the tunnel
    /// writes this exchange's summary when both sides are done.
    private func switchProtocols(task: UpstreamTask, upstream: ByteStream, upstreamLeftover: [UInt8]) {
        finished = true
        guard let upgradeProtocol else { preconditionFailure("a switch nobody asked for") }
        let tunnel = Tunnel(head: head, summary: summary, upgrade: acceptedUpgrade ?? upgradeProtocol, origin: origin,
                            taskID: task.id, metrics: task.metrics, client: client)
        client.exchangeDidSwitchProtocols(to: tunnel)
        tunnel.adopt(upstream, upstreamLeftover: upstreamLeftover)
    }

    // MARK: - Finishing

    /// Ends the exchange with `error`: an error response if nothing was sent yet, otherwise a
    /// truncated response (the connection closes without completing the body).
    private func fail(_ error: ProxyError) {
        guard !finished else { return }
        task?.cancel()
        if !responseHeadSent {
            if error.status != nil {
                client.connection.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: id))
                summary.status = error.status
            }
            finish(error: error, keepAlive: false)
        } else {
            finish(error: error, keepAlive: false, truncate: true)
        }
    }

    private func finish(error: ProxyError?, keepAlive: Bool, truncate: Bool = false) {
        guard !finished else { return }
        finished = true
        summary.error = error
        summary.end = .now()
        session.exchangesInFlight.subtract(1, ordering: .relaxed)
        session.exchangesFinished.add(1, ordering: .relaxed)
        let summary = self.summary
        session.emit(.summaries) {
            .requestDidFinish(EventContext(time: summary.end, connectionID: client.id, requestID: id), summary)
        }
        if truncate {
            // The bytes relayed so far still go out, then a reset: the client must see a failed
            // transfer, never a short "complete" one.
            client.resetAfterFlush(reason: "upstream_failed")
            return
        }
        client.exchangeDidFinish(keepAlive: keepAlive)
    }
}
