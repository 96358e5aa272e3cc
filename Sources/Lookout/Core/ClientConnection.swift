import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS

/// One accepted client connection: parses its requests and runs them one at a time as exchanges
/// (`ProxyRequest`), tunnels (`Tunnel`) or answers of the proxy's own (status page, errors).
///
/// Input that cannot be handled yet (pipelined requests, body bytes while the upstream connects)
/// is kept in `stash`, and reading pauses until it is consumed, so the stash stays within one read.
///
/// An intercepted CONNECT swaps the socket for a `TLSStream` with a leaf from the local CA; the
/// requests inside then run through the same parser and exchanges, toward the CONNECT's origin.
final class ClientConnection: ConnectionDelegate, @unchecked Sendable {  // confined to `connection.loop.queue`
    let session: Session
    let context: LoopContext
    private(set) var connection: ByteStream
    var id: UInt64 { connection.id }
    let clientAddress: String

    private var parser: HTTPRequestParser
    private var stash: [UInt8] = []
    private(set) var exchange: ProxyRequest?
    private var tunnel: Tunnel?
    private var requestsServed = 0
    private let timer: LoopTimer
    private var lastActivity = Instant.now()
    private var headTimerArmed = false
    private var closeWhenIdle = false
    private var isClosed = false
    private var closeReason = "closed"
    /// After an intercepted CONNECT: the https origin the requests inside go to.
    private var interceptedOrigin: Origin?
    /// True while an intercepted client's TLS handshake runs.
    private var isAwaitingClientHandshake = false

    init(session: Session, context: LoopContext, connection: Connection) {
        self.session = session
        self.context = context
        self.connection = connection
        self.clientAddress = connection.peerAddress?.description ?? "unknown"
        self.parser = HTTPRequestParser(limits: session.configuration.parserLimits)
        self.timer = LoopTimer(loop: connection.loop)
        timer.setStandingHandler { [unowned self] in timerFired() }
    }

    func start() {
        connection.delegate = self
        connection.resumeReading()
        armIdleTimer()
    }

    // MARK: - ConnectionDelegate

    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        lastActivity = .now()
        if let tunnel {
            tunnel.clientDidRead(bytes)
            return
        }
        consume(bytes)
    }

    func connectionDidReadEOF(_ connection: ByteStream) {
        if let tunnel {
            tunnel.clientDidReadEOF()
            return
        }
        if let exchange {
            exchange.clientDidClose(ProxyError.clientFailed(reason: .closed("end of stream")))
            return
        }
        if !parser.isIdle {
            let error = ProxyError.clientFailed(reason: .closed("in the middle of a request head"))
            recordFailedRequest(error, sendResponse: false)
        }
        close(reason: "client_closed")
    }

    func connectionDidDrain(_ connection: ByteStream) {
        if let tunnel {
            tunnel.clientDidDrain()
        } else {
            exchange?.clientDidDrain()
        }
    }

    func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        let failure = ProxyError.clientFailed(reason: .closed(error.description))
        if let tunnel {
            tunnel.clientDidFail(failure)
        } else if let exchange {
            exchange.clientDidClose(failure)
        }
        close(reason: "client_error")
    }

    // MARK: - Parsing

    /// Whether the parser may produce the next event now.
    private var canParse: Bool {
        if isClosed || tunnel != nil || isAwaitingClientHandshake { return false }
        if let exchange { return exchange.acceptsRequestBody }
        return !closeWhenIdle || requestsServed == 0
    }

    private func consume(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        // Where the current message began in this read, so a rejected head can still be logged
        // with the method and target the client sent.
        var messageStart: Int? = nil
        while canParse {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let consumed: Int
            let event: HTTPParseEvent<RequestHead>?
            if exchange == nil && parser.isIdle { messageStart = offset }
            do {
                (consumed, event) = try parser.parse(slice)
            } catch {
                let startLine = messageStart.flatMap { RequestLineSketch(UnsafeRawBufferPointer(rebasing: bytes[$0...])) }
                rejectInput(ProxyError(requestParseError: error), startLine: startLine)
                return
            }
            offset += consumed
            guard let event else { break }
            switch event {
            case .head(let head):
                begin(head)
            case .body(let range):
                exchange?.clientSentBody(UnsafeRawBufferPointer(rebasing: slice[range]))
            case .end(let trailers):
                exchange?.clientFinishedBody(trailers: trailers)
            }
        }
        if offset < bytes.count && !isClosed {
            stash.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            connection.pauseReading()
        }
        if exchange == nil && tunnel == nil && !parser.isIdle && !headTimerArmed && !isClosed {
            armHeadTimer()
        }
    }

    /// Continues with stashed input once the current exchange can take more, then reads again.
    func resumeInput() {
        guard !isClosed else { return }
        if !stash.isEmpty && (canParse || tunnel != nil) {
            let pending = stash
            stash = []
            pending.withUnsafeBytes { bytes in
                if let tunnel { tunnel.clientDidRead(bytes) } else { consume(bytes) }
            }
        } else if canParse {
            // A bodiless request's end event may still be waiting inside the parser.
            consume(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        if stash.isEmpty && !isClosed && (canParse || tunnel != nil) {
            connection.resumeReading()
        }
    }

    // MARK: - Requests

    private func begin(_ head: RequestHead) {
        timer.cancel()
        headTimerArmed = false
        requestsServed += 1
        let requestID = session.makeRequestID()
        // Inside an intercepted CONNECT the client already authenticated (on the CONNECT).
        if let authenticator = session.authenticator, head.target.isProxied, interceptedOrigin == nil,
           !authenticator.accepts(head.headerFields) {
            reject(head, requestID: requestID, error: .requestRejected(reason: .proxyAuthenticationRequired))
            return
        }
        switch head.target {
        case .authority(let host, let port):
            beginTunnel(head, requestID: requestID, host: host, port: port)
        case .absolute(let scheme, let host, let port, let path):
            guard scheme == "http" || scheme == "https" else {
                reject(head, requestID: requestID, error: .requestRejected(reason: .unsupportedScheme(scheme)))
                return
            }
            let isSecure = scheme == "https"
            let origin = Origin(host: host, port: port ?? (isSecure ? 443 : 80), isSecure: isSecure)
            startExchange(head, requestID: requestID, origin: origin, path: path, url: head.rawTarget)
        case .origin(let path):
            if let interceptedOrigin {
                startExchange(head, requestID: requestID, origin: interceptedOrigin, path: path,
                              url: interceptedOrigin.url(path: path))
            } else {
                answerAdmin(head, requestID: requestID, path: path)
            }
        case .asterisk:
            reject(head, requestID: requestID, error: .requestRejected(reason: .notAProxyRequest(path: "*")), kind: .admin)
        }
    }

    private func startExchange(_ head: RequestHead, requestID: UInt64, origin: Origin, path: String, url: String) {
        let exchange = ProxyRequest(id: requestID, client: self, head: head, origin: origin, path: path, url: url,
                                    kind: interceptedOrigin == nil ? .http : .intercepted)
        self.exchange = exchange
        exchange.start()
    }

    private func beginTunnel(_ head: RequestHead, requestID: UInt64, host: String, port: Int) {
        guard session.configuration.allowedConnectPorts.contains(port) else {
            reject(head, requestID: requestID, error: .requestRejected(reason: .connectPortNotAllowed(port: port)))
            return
        }
        if let engine = session.interceptionTLS, session.configuration.tls.intercepts(host),
           let plain = connection as? Connection {
            beginInterception(head, requestID: requestID, origin: Origin(host: host, port: port, isSecure: true),
                              engine: engine, plain: plain)
            return
        }
        if session.configuration.tls.pinningWithoutInterception == .refuse,
           let rule = session.trustManager.pinningRuleName(for: host) {
            reject(head, requestID: requestID, error: .requestRejected(reason: .pinningRequiresInterception(host: host, rule: rule)))
            return
        }
        let tunnel = Tunnel(id: requestID, client: self, head: head, origin: Origin(host: host, port: port))
        self.tunnel = tunnel
        connection.pauseReading()
        tunnel.start()
    }

    // MARK: - Interception

    /// Answers the CONNECT, then terminates the client's TLS with a leaf for its SNI (or the
    /// CONNECT host). The handshake starts on the next turn of the loop, once whatever arrived
    /// behind the CONNECT head has been set aside: it is the start of the ClientHello.
    private func beginInterception(_ head: RequestHead, requestID: UInt64, origin: Origin, engine: TLSEngine,
                                   plain: Connection) {
        timer.cancel()
        plain.write(Tunnel.established)
        plain.pauseReading()
        isAwaitingClientHandshake = true
        interceptedOrigin = origin
        parser = HTTPRequestParser(limits: session.configuration.parserLimits)
        let start = Instant.now()
        connection.loop.execute { [weak self] in
            guard let self, !isClosed else { return }
            let tls: TLSConnection
            do {
                tls = try engine.makeServerConnection(fallbackServerName: origin.host)
            } catch {
                interceptionFailed(.clientFailed(reason: .tlsHandshakeFailed("\(error)")), head: head,
                                   requestID: requestID, origin: origin, serverName: nil, start: start)
                return
            }
            let stream = TLSStream(transport: plain, tls: tls)
            connection = stream
            let early = stash
            stash = []
            stream.startHandshake(timeout: session.configuration.timeouts.tlsHandshake, initialCiphertext: early) {
                [weak self] result in
                guard let self, !isClosed else { return }
                isAwaitingClientHandshake = false
                switch result {
                case .success:
                    stream.delegate = self
                    let id = self.id
                    session.emit(.lifecycle) {
                        .clientTLSHandshakeDidComplete(EventContext(connectionID: id), serverName: tls.serverName,
                                                       version: tls.negotiatedProtocolVersion ?? "",
                                                       cipher: tls.cipherSuite ?? "", applicationProtocol: tls.applicationProtocol)
                    }
                    armIdleTimer()
                    resumeInput()
                case .failure(.timedOut(let after)):
                    interceptionFailed(.clientFailed(reason: .tlsHandshakeTimedOut(after: after)), head: head,
                                       requestID: requestID, origin: origin, serverName: tls.serverName, start: start)
                case .failure(let failure):
                    interceptionFailed(.clientFailed(reason: .tlsHandshakeFailed(Self.describe(failure))), head: head,
                                       requestID: requestID, origin: origin, serverName: tls.serverName, start: start)
                }
            }
        }
    }

    /// "the client sent alert: unknown ca" reads better than OpenSSL's error stack alone.
    private static func describe(_ failure: TLSHandshakeFailure) -> String {
        guard case .tls(let error) = failure else { return failure.description }
        if let alert = error.alertReceived { return "the client sent alert \"\(alert)\" (\(error.reason))" }
        return error.reason
    }

    /// The intercepted client's handshake failed: one record for the CONNECT, then close.
    private func interceptionFailed(_ error: ProxyError, head: RequestHead, requestID: UInt64, origin: Origin,
                                    serverName: String?, start: Instant) {
        isAwaitingClientHandshake = false
        let id = self.id
        session.emit(.lifecycle) { .clientTLSHandshakeDidFail(EventContext(connectionID: id), serverName: serverName, error: error) }
        session.emit(.lifecycle) { .didFailToCreateRequest(EventContext(connectionID: id, requestID: requestID), error: error) }
        var summary = ExchangeSummary(requestID: requestID, connectionID: id, clientAddress: clientAddress, kind: .intercepted,
                                      method: head.method.rawValue, url: origin.authority,
                                      httpVersion: head.version.description, start: start)
        summary.status = 200
        summary.error = error
        finishRecord(summary)
        close(reason: "client_tls_failed")
    }

    private func answerAdmin(_ head: RequestHead, requestID: UInt64, path: String) {
        let keepAlive = head.keepAlive && !closeWhenIdle
        guard let response = AdminResponder.response(for: head, path: path, session: session, keepAlive: keepAlive) else {
            reject(head, requestID: requestID, error: .requestRejected(reason: .notAProxyRequest(path: path)), kind: .admin)
            return
        }
        let start = Instant.now()
        emitCreated(head, requestID: requestID, url: adminURL(path))
        connection.write(response.bytes)
        var summary = ExchangeSummary(requestID: requestID, connectionID: id, clientAddress: clientAddress, kind: .admin,
                                      method: head.method.rawValue, url: adminURL(path),
                                      httpVersion: head.version.description, start: start)
        summary.status = response.status
        finishRecord(summary)
        // Admin requests carry no body worth reading; skip to the next message.
        if head.framing != .none { closeWhenIdle = true }
        if !keepAlive { closeWhenIdle = true }
        exchangeDidFinish(keepAlive: keepAlive && head.framing == .none)
    }

    private func adminURL(_ path: String) -> String {
        "http://\(connection.localAddress?.description ?? "lookout")\(path)"
    }

    /// Refuses a request whose head parsed but which cannot be served.
    private func reject(_ head: RequestHead, requestID: UInt64, error: ProxyError, kind: ExchangeSummary.Kind? = nil) {
        let start = Instant.now()
        let url = head.rawTarget
        emitCreated(head, requestID: requestID, url: url)
        session.emit(.lifecycle) { .didRejectClient(EventContext(connectionID: id, requestID: requestID), error: error) }
        connection.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: requestID))
        var summary = ExchangeSummary(requestID: requestID, connectionID: id, clientAddress: clientAddress,
                                      kind: kind ?? (head.method == .connect ? .tunnel : .http), method: head.method.rawValue,
                                      url: url, httpVersion: head.version.description, start: start)
        summary.status = error.status
        summary.error = error
        finishRecord(summary)
        closeAfterResponse()
    }

    /// The head could not be parsed: answer the error, record it, close.
    private func rejectInput(_ error: ProxyError, startLine: RequestLineSketch?) {
        if let exchange {
            // The body was malformed mid-exchange.
            exchange.clientSentInvalidBody(error)
            return
        }
        recordFailedRequest(error, sendResponse: true, startLine: startLine)
        closeAfterResponse()
    }

    private func recordFailedRequest(_ error: ProxyError, sendResponse: Bool, startLine: RequestLineSketch? = nil) {
        let requestID = session.makeRequestID()
        let start = Instant.now()
        session.emit(.lifecycle) { .didFailToCreateRequest(EventContext(connectionID: id, requestID: requestID), error: error) }
        var summary = ExchangeSummary(requestID: requestID, connectionID: id, clientAddress: clientAddress,
                                      kind: startLine?.method == "CONNECT" ? .tunnel : .http,
                                      method: startLine?.method ?? "", url: startLine?.target ?? "",
                                      httpVersion: startLine?.version ?? "", start: start)
        if sendResponse, error.status != nil {
            connection.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: requestID))
            summary.status = error.status
        }
        summary.error = error
        finishRecord(summary)
    }

    func emitCreated(_ head: RequestHead, requestID: UInt64, url: String) {
        session.emit(.lifecycle) {
            .didCreateInitialRequest(EventContext(connectionID: id, requestID: requestID),
                                     RequestDescription(method: head.method.rawValue, url: url,
                                                        httpVersion: head.version.description,
                                                        headerFields: head.headerFields, client: clientAddress))
        }
    }

    /// Emits the final record of an exchange that never became a `ProxyRequest`.
    private func finishRecord(_ summary: ExchangeSummary) {
        var summary = summary
        summary.end = .now()
        session.exchangesFinished.add(1, ordering: .relaxed)
        session.emit(.summaries) {
            .requestDidFinish(EventContext(time: summary.end, connectionID: id, requestID: summary.requestID), summary)
        }
    }

    // MARK: - Exchange and tunnel completion

    /// The current exchange is over. Continue with the next request, or close.
    func exchangeDidFinish(keepAlive: Bool) {
        exchange = nil
        guard !isClosed else { return }
        if !keepAlive || closeWhenIdle {
            closeAfterResponse()
            return
        }
        armIdleTimer()
        resumeInput()
    }

    /// The exchange's origin switched protocols (101): from now on this connection is the
    /// client side of `tunnel`, which resumes input (stashed bytes are already the new protocol).
    func exchangeDidSwitchProtocols(to tunnel: Tunnel) {
        exchange = nil
        self.tunnel = tunnel
    }

    /// The tunnel is over: deliver what is still queued for the client (the origin's last bytes,
    /// or an error response), then close — or reset, when the origin's side broke off
    /// (`upstreamFailed`), so the client cannot take the end for a clean one.
    func tunnelDidFinish(upstreamFailed: Bool = false) {
        tunnel = nil
        if upstreamFailed {
            resetAfterFlush(reason: "upstream_failed")
            return
        }
        closeReason = "tunnel_closed"
        closeAfterResponse()
    }

    // MARK: - Timers

    /// What the one timer is waiting for: a request head to complete, or the next request.
    private enum TimerPurpose { case idle, head }
    private var timerPurpose = TimerPurpose.idle

    private func timerFired() {
        switch timerPurpose {
        case .idle: idleTimerFired(limit: session.configuration.timeouts.clientIdle)
        case .head: headTimerFired(limit: session.configuration.timeouts.clientHeader)
        }
    }

    private func armIdleTimer() {
        headTimerArmed = false
        timerPurpose = .idle
        timer.schedule(after: session.configuration.timeouts.clientIdle)
    }

    private func idleTimerFired(limit: Double) {
        guard exchange == nil, tunnel == nil, !isClosed else { return }
        if !parser.isIdle {
            armHeadTimer()
            return
        }
        let idleFor = Instant.now().milliseconds(since: lastActivity) / 1000
        if idleFor + 0.01 < limit {
            timer.schedule(after: limit - idleFor)
            return
        }
        close(reason: "idle_timeout")
    }

    private func armHeadTimer() {
        headTimerArmed = true
        timerPurpose = .head
        timer.schedule(after: session.configuration.timeouts.clientHeader)
    }

    private func headTimerFired(limit: Double) {
        guard exchange == nil, tunnel == nil, !isClosed else { return }
        recordFailedRequest(.clientFailed(reason: .headerTimedOut(after: limit)), sendResponse: true)
        closeAfterResponse()
    }

    // MARK: - Closing

    /// Shutdown: idle connections close now, busy ones after their current exchange.
    func beginShutdown() {
        closeWhenIdle = true
        if exchange == nil && tunnel == nil && stash.isEmpty && parser.isIdle {
            close(reason: "shutdown")
        }
    }

    /// Whether responses on this connection should announce `Connection: close`.
    var isClosingAfterExchange: Bool { closeWhenIdle }

    func forceClose() {
        if let tunnel { tunnel.abort(.sessionUnavailable(reason: .shuttingDown)) }
        if let exchange { exchange.abort(.sessionUnavailable(reason: .shuttingDown)) }
        close(reason: "shutdown")
    }

    private func closeAfterResponse() {
        guard !isClosed else { return }
        isClosed = true
        if closeReason == "closed" { closeReason = "server_closed" }
        timer.invalidate()
        connection.delegate = nil
        connection.closeAfterFlush()
        didClose()
    }

    /// Delivers what is queued, then resets the connection: the client gets every byte relayed
    /// before a failure and still sees that the response (or tunnel) broke off.
    func resetAfterFlush(reason: String) {
        guard !isClosed else { return }
        isClosed = true
        closeReason = reason
        timer.invalidate()
        connection.delegate = nil
        connection.resetAfterFlush()
        didClose()
    }

    func close(reason: String, abortive: Bool = false) {
        guard !isClosed else { return }
        isClosed = true
        closeReason = reason
        timer.invalidate()
        connection.close(abortive: abortive)
        didClose()
    }

    private func didClose() {
        stash = []
        let id = self.id
        let reason = closeReason
        let served = requestsServed
        let received = connection.bytesRead
        let sent = connection.bytesWritten
        session.emit(.lifecycle) {
            .connectionDidClose(EventContext(connectionID: id), reason: reason, requests: served,
                                bytesReceived: received, bytesSent: sent)
        }
        session.clientDidClose(self, context: context)
    }
}
