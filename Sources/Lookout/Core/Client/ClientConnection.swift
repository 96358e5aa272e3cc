import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutAdmin
import LookoutModel
import LookoutUpstream

/// One accepted client connection: parses its requests and runs them one at a time as exchanges
/// (`Exchange`), tunnels (`Tunnel`) or answers of the proxy's own (status page, errors). This file
/// is the parse loop and the connection's life; routing, interception and timers have a file each.
///
/// Input that cannot be handled yet (pipelined requests, body bytes while the upstream connects)
/// is kept in `stash`, and reading pauses until it is consumed, so the stash stays within one read.
///
/// An intercepted CONNECT swaps the socket for a `TLSStream` with a leaf from the local CA; the
/// requests inside then run through the same parser and exchanges, toward the CONNECT's origin.
final class ClientConnection: ConnectionDelegate, ExchangeDelegate, @unchecked Sendable {  // confined to `connection.loop.queue`
    var environment: ClientEnvironment
    /// Told when the connection closes; the admin pages read the session's state through it.
    unowned let owner: any ClientConnectionOwner
    let context: LoopContext
    var connection: ByteStream
    var id: UInt64 { connection.id }

    var parser: HTTPRequestParser
    var stash: [UInt8] = []
    var exchange: Exchange?
    var tunnel: Tunnel?
    var requestsServed = 0
    let timer: LoopTimer
    var lastActivity = Instant.now()
    var headTimerArmed = false
    var closeWhenIdle = false
    var isClosed = false
    var closeReason = "closed"
    /// The origin of the last plain proxied request: a kept-alive client usually asks the same
    /// origin again, and then gets the same `Origin` (its rule key, authority and Host value made
    /// once per connection, not once per request).
    var lastOrigin: Origin?
    /// What the one timer is waiting for: a request head to complete, or the next request.
    enum TimerPurpose { case idle, head }
    var timerPurpose = TimerPurpose.idle

    /// The records this connection's exchanges, tunnels and refusals write.
    var records: ExchangeRecords
    /// What the listener that accepted it speaks (`admin`: only the admin pages, nothing proxied).
    let role: ListenerRole
    var adminOnly: Bool { role == .admin }
    /// The loop's current `auth` and `policy`.
    var rules: ClientRules { context.rules }
    /// How the current exchange's response body is delimited on the wire (`writeHead` sets it).
    var responseFraming = ClientFraming.none
    /// After an intercepted handshake that chose `h2`: the connection's HTTP/2 side, which runs
    /// its streams' exchanges; the parser is unused from then on.
    var http2: HTTP2ClientSide?
    /// The fields below, out of line: most connections have none of them.
    private var occasional: ClientConnectionOccasional?

    init(environment: ClientEnvironment, owner: any ClientConnectionOwner, context: LoopContext, connection: Connection,
         role: ListenerRole = .proxy, listenerTLS: TLSEngine? = nil) {
        self.environment = environment
        self.owner = owner
        self.role = role
        self.context = context
        self.connection = connection
        self.records = ExchangeRecords(environment: environment.exchanges, connectionID: connection.id,
                                       clientAddress: connection.peerAddress?.description ?? "unknown")
        self.parser = HTTPRequestParser(limits: environment.parserLimits)
        self.timer = LoopTimer(loop: connection.loop)
        if let listenerTLS { occasionalState.listenerTLS = listenerTLS }
        timer.setOwner(self)
    }

    var clientAddress: String { records.clientAddress }

    private var occasionalState: ClientConnectionOccasional {
        if let occasional { return occasional }
        let made = ClientConnectionOccasional()
        occasional = made
        return made
    }

    /// Writes one occasional field; an empty value (nil, false) makes no object for itself.
    private func setOccasional<Value>(_ field: ReferenceWritableKeyPath<ClientConnectionOccasional, Value?>, _ value: Value?) {
        guard value != nil || occasional != nil else { return }
        occasionalState[keyPath: field] = value
    }

    private func setOccasional(_ field: ReferenceWritableKeyPath<ClientConnectionOccasional, Bool>, _ value: Bool) {
        guard value || occasional != nil else { return }
        occasionalState[keyPath: field] = value
    }

    /// After an intercepted CONNECT: the https origin the requests inside go to.
    var interceptedOrigin: Origin? {
        get { occasional?.interceptedOrigin }
        set { setOccasional(\.interceptedOrigin, newValue) }
    }
    /// True while an intercepted client's TLS handshake runs.
    var isAwaitingClientHandshake: Bool {
        get { occasional?.isAwaitingClientHandshake ?? false }
        set { setOccasional(\.isAwaitingClientHandshake, newValue) }
    }
    /// A streamed admin body in progress (`GET /events`): the connection's last answer.
    var adminStream: AdminStreamState? {
        get { occasional?.adminStream }
        set { setOccasional(\.adminStream, newValue) }
    }
    /// An admin answer is being gathered from the other loops (`AdminAnswer.deferred`).
    var awaitingAdminAnswer: Bool {
        get { occasional?.awaitingAdminAnswer ?? false }
        set { setOccasional(\.awaitingAdminAnswer, newValue) }
    }
    /// An admin request whose body is being read.
    var pendingAdmin: PendingAdminRequest? {
        get { occasional?.pendingAdmin }
        set { setOccasional(\.pendingAdmin, newValue) }
    }
    /// A CONNECT to a host with learned passthroughs: its ClientHello is read first, to choose
    /// between interception and a blind tunnel (`interception.learn_passthrough`).
    var pendingHello: PendingHello? {
        get { occasional?.pendingHello }
        set { setOccasional(\.pendingHello, newValue) }
    }
    /// A transparent or SOCKS5 connection until its first bytes say what it carries, and then
    /// (plain HTTP) where its requests go.
    var capture: CaptureState? {
        get { occasional?.capture }
        set { setOccasional(\.capture, newValue) }
    }
    /// The `auth.users` name the client authenticated as (a proxy request's credentials, a
    /// CONNECT's for the requests inside it, or SOCKS5's), which the `policy` reads.
    var authenticatedUser: String? {
        get { occasional?.authenticatedUser }
        set { setOccasional(\.authenticatedUser, newValue) }
    }
    /// A TLS listener's client: the RFC 2253 subject of the certificate it presented.
    var certificateSubject: String? {
        get { occasional?.certificateSubject }
        set { setOccasional(\.certificateSubject, newValue) }
    }
    /// The engine of a TLS listener: the connection's first bytes are its handshake.
    var listenerTLS: TLSEngine? { occasional?.listenerTLS }

    /// Starts reading. A transparent listener's connection brings its original destination.
    func start(destination: OriginalDestination? = nil) {
        connection.delegate = self
        switch role {
        case .proxy where listenerTLS != nil:
            beginListenerTLS(listenerTLS!)
        case .proxy, .admin:
            connection.resumeReading()
            armIdleTimer()
        case .transparent:
            beginTransparent(destination ?? .unknown("not read"))
        case .socks5:
            beginSocks()
        }
    }

    // MARK: - ConnectionDelegate

    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        lastActivity = .now()
        if let capture, capture.isWaiting {
            captureBytesArrived(bytes, capture)
            return
        }
        if pendingHello != nil {
            helloArrived(bytes)
            return
        }
        if let http2 {
            http2.didRead(bytes)
            return
        }
        if adminStream != nil { return }
        if let tunnel {
            tunnel.clientDidRead(bytes)
            return
        }
        consume(bytes)
    }

    func connectionDidReadEOF(_ connection: ByteStream) {
        if let capture, capture.isWaiting {
            captureEnded(capture)
            return
        }
        if pendingHello != nil {
            pendingHello = nil
            close(reason: "client_closed")
            return
        }
        if let http2 {
            http2.clientDidEnd(.clientFailed(reason: .closed("end of stream")))
            close(reason: "client_closed")
            return
        }
        if adminStream != nil {
            endAdminStream(error: nil)
            return
        }
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
        if let http2 {
            http2.didDrain()
        } else if let adminStream {
            adminStream.sink.connectionDidDrain()
        } else if let tunnel {
            tunnel.clientDidDrain()
        } else {
            exchange?.clientDidDrain()
        }
    }

    func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        let failure = ProxyError.clientFailed(reason: .closed(error.description))
        if let http2 {
            http2.clientDidEnd(failure)
        } else if adminStream != nil {
            endAdminStream(error: failure)
            return
        } else if let tunnel {
            tunnel.clientDidFail(failure)
        } else if let exchange {
            exchange.clientDidClose(failure)
        }
        close(reason: "client_error")
    }

    // MARK: - Parsing

    /// Whether the parser may produce the next event now.
    var canParse: Bool {
        if isClosed || tunnel != nil || http2 != nil || adminStream != nil || awaitingAdminAnswer || isAwaitingClientHandshake {
            return false
        }
        if let exchange { return exchange.acceptsRequestBody }
        return !closeWhenIdle || requestsServed == 0
    }

    func consume(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        // Where the current message began in this read, so a rejected head can still be logged
        // with the method and target the client sent.
        var messageStart: Int? = nil
        while canParse {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let consumed: Int
            var parsed: HTTPParseEvent<RequestHead>?
            if exchange == nil && parser.isIdle { messageStart = offset }
            do {
                (consumed, parsed) = try parser.parse(slice)
            } catch {
                let startLine = messageStart.flatMap { RequestLineSketch(UnsafeRawBufferPointer(rebasing: bytes[$0...])) }
                rejectInput(ProxyError(requestParseError: error), startLine: startLine)
                return
            }
            offset += consumed
            // Taken out, not bound: a binding would leave `parsed` another owner of the head.
            guard let event = parsed.take() else { break }
            switch consume event {
            case .head(let head):
                begin(head)
            case .body(let range):
                let bytes = UnsafeRawBufferPointer(rebasing: slice[range])
                if let exchange { exchange.clientSentBody(bytes) } else { adminBodyArrived(bytes) }
            case .end(let trailers):
                if let exchange { exchange.clientFinishedBody(trailers: trailers) } else { adminBodyEnded() }
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

    // MARK: - ExchangeDelegate

    func exchangeCanTakeInput() {
        resumeInput()
    }

    /// The current exchange is over. Continue with the next request, or close.
    func exchangeDidFinish(keepAlive: Bool) {
        exchange = nil
        guard !isClosed else { return }
        if !keepAlive || closeWhenIdle {
            closeAfterResponse()
            return
        }
        armIdleTimer()
        guard stash.isEmpty else {
            // Pipelined bytes already read hold the next request: it starts on a later turn of the
            // loop, never inside this exchange's finish, which runs on the stack of the upstream
            // read that ended it. The closure keeps the connection for that turn.
            connection.loop.execute { [self] in resumeInput() }
            return
        }
        // With nothing stashed the parser can give only the finished request's end (a partial
        // head it holds cannot complete without more bytes): no exchange starts here, and reading
        // goes on.
        resumeInput()
    }

    func exchangeDidBreakOff() {
        exchange = nil
        resetAfterFlush(reason: "upstream_failed")
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
    func tunnelDidFinish(upstreamFailed: Bool) {
        tunnel = nil
        if upstreamFailed {
            resetAfterFlush(reason: "upstream_failed")
            return
        }
        closeReason = "tunnel_closed"
        closeAfterResponse()
    }

    // MARK: - Operator

    /// The running exchanges or tunnel as an operator sees them (several on HTTP/2).
    func inFlightSnapshots(at now: Instant) -> [InFlightExchange] {
        if let http2 { return http2.inFlightSnapshots(at: now) }
        if let tunnel { return tunnel.inFlightSnapshot(at: now).map { [$0] } ?? [] }
        return exchange.flatMap { InFlightExchange($0, at: now) }.map { [$0] } ?? []
    }

    func runs(exchange id: UInt64) -> Bool {
        if let http2 { return http2.runs(exchange: id) }
        return tunnel?.id == id || exchange?.id == id
    }

    /// Cancels the running exchange or tunnel `id` (the operator's `DELETE /exchanges/ID`).
    func cancel(exchange id: UInt64, error: ProxyError) {
        if let http2 {
            http2.cancel(exchange: id, error: error)
        } else if let tunnel, tunnel.id == id {
            tunnel.cancel(error)
        } else if let exchange, exchange.id == id {
            exchange.cancel(error)
        }
    }

    // MARK: - Closing

    /// Shutdown: idle connections close now, busy ones after their current exchange.
    func beginShutdown() {
        closeWhenIdle = true
        if let http2 {
            http2.beginShutdown()
            return
        }
        if adminStream != nil {
            endAdminStream(error: .sessionUnavailable(reason: .shuttingDown))
            return
        }
        if exchange == nil && tunnel == nil && !awaitingAdminAnswer && stash.isEmpty && parser.isIdle {
            close(reason: "shutdown")
        }
    }

    /// Whether responses on this connection should announce `Connection: close`.
    var isClosingAfterExchange: Bool { closeWhenIdle }

    func forceClose() {
        if let http2 { http2.forceClose() }
        if adminStream != nil { endAdminStream(error: .sessionUnavailable(reason: .shuttingDown)) }
        if let tunnel { tunnel.abort(.sessionUnavailable(reason: .shuttingDown)) }
        if let exchange { exchange.abort(.sessionUnavailable(reason: .shuttingDown)) }
        close(reason: "shutdown")
    }

    func closeAfterResponse() {
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
    private func resetAfterFlush(reason: String) {
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

    func didClose() {
        stash = []
        let id = self.id
        let reason = closeReason
        let served = requestsServed + (http2?.requestsServed ?? 0)
        let received = connection.bytesRead
        let sent = connection.bytesWritten
        environment.exchanges.emit(EventContext(connectionID: id), ConnectionDidClose(
            reason: reason, requests: served, bytesReceived: received, bytesSent: sent))
        owner.clientConnectionDidClose(self)
    }
}

extension ClientConnection: HTTP2ClientSideDelegate {
    func http2ClientSideDidEnd(reason: String) {
        closeReason = reason
        closeAfterResponse()
    }
}
