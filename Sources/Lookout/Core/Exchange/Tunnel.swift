import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// A blind `CONNECT` tunnel (RFC 9110 §9.3.6): once the origin is connected, bytes are relayed both
/// ways with backpressure until each side has finished; half-closes are passed on.
///
/// Also what an exchange becomes after the origin switched protocols (`Upgrade`, e.g. WebSocket;
/// RFC 9110 §7.8): then it adopts the exchange's upstream connection, and its summary is the
/// exchange's, with the bytes relayed after the 101.
final class Tunnel: ConnectionDelegate, UpstreamOpenerClient, @unchecked Sendable {  // confined to the client connection's loop queue
    static let established = Array("HTTP/1.1 200 Connection Established\r\n\r\n".utf8)

    let id: UInt64
    /// Where the upstream's bytes go; only ever written to here.
    private let client: ByteStream
    /// The client connection that owns this tunnel (`unowned`, as for `Exchange`).
    private unowned let delegate: ExchangeDelegate
    let head: RequestHead
    let origin: Origin
    private let taskID: UInt64
    private let environment: ExchangeEnvironment
    private let context: LoopContext
    private let records: ExchangeRecords
    private var summary: ExchangeSummary
    private var upstream: ByteStream?
    /// The protocol an exchange switched to; nil for a CONNECT tunnel.
    private let upgrade: String?
    private var opening: OpenHandle?
    private var openedAt: Instant?
    private var clientToUpstream: UInt64 = 0
    private var upstreamToClient: UInt64 = 0
    private var clientFinished = false
    private var upstreamFinished = false
    private var isDone = false
    /// One side's connection failed (e.g. was reset): the other is reset too, after its bytes.
    private var upstreamBrokeOff = false
    private var clientBrokeOff = false
    /// The upstream connection's transaction; the opener records DNS and connect timings into it.
    var metrics: TransactionMetrics
    /// Closes the tunnel after `timeouts.tunnel_idle` without a byte either way.
    private let idleTimer: LoopTimer
    private var lastActivity = Instant.now()
    /// The host's shaping, made as an exchange's is (`ExchangeShaping`): a CONNECT tunnel waits its
    /// latency before opening; both kinds are paced each way (blind tunnels get latency and
    /// bandwidth only: their bytes are opaque).
    private var shaping: ExchangeShaping?
    private var waitingForLatency = false
    /// A WebSocket's messages, read from copies of what is relayed (`messages`).
    private var webSocket: WebSocketWatch?
    /// The client already got its `200` (a CONNECT whose ClientHello was read first, to choose a
    /// learned passthrough); `initialClientBytes` is that ClientHello, sent on once connected.
    var alreadyEstablished = false
    var initialClientBytes: [UInt8] = []
    /// A blind tunnel: its client's first record, for the ClientHello's JA4.
    private var helloGatherer: FirstRecordGatherer?
    /// A blind tunnel: looks for a cleartext WebSocket inside it (`messages`).
    private var sniffer: TunnelSniffer?

    /// A `CONNECT` tunnel; `start` opens its upstream connection.
    convenience init(id: UInt64, head: RequestHead, origin: Origin, client: ByteStream, delegate: ExchangeDelegate,
                     environment: ExchangeEnvironment, context: LoopContext, records: ExchangeRecords) {
        let start = Instant.now()
        let summary = ExchangeSummary(requestID: id, connectionID: records.connectionID, clientAddress: records.clientAddress,
                                      kind: .tunnel, method: "CONNECT", url: origin.authority,
                                      httpVersion: head.version.description, start: start)
        var metrics = TransactionMetrics(fetchStart: start)
        metrics.networkProtocolName = "tunnel"
        self.init(head: head, summary: summary, upgrade: nil, origin: origin, taskID: environment.makeTaskID(),
                  metrics: metrics, client: client, delegate: delegate, environment: environment, context: context,
                  records: records)
    }

    /// Either kind: a `CONNECT` tunnel (`upgrade` nil, through the convenience initialiser), or
    /// the tunnel an exchange becomes after a 101 (`upgrade` names the protocol; `adopt` starts it).
    init(head: RequestHead, summary: ExchangeSummary, upgrade: String?, origin: Origin, taskID: UInt64,
         metrics: TransactionMetrics, client: ByteStream, delegate: ExchangeDelegate, environment: ExchangeEnvironment,
         context: LoopContext, records: ExchangeRecords, shaping: ExchangeShaping? = nil) {
        self.id = summary.requestID
        self.client = client
        self.delegate = delegate
        self.head = head
        self.origin = origin
        self.environment = environment
        self.context = context
        self.records = records
        self.taskID = taskID
        self.summary = summary
        self.summary.upgrade = upgrade
        self.metrics = metrics
        self.idleTimer = LoopTimer(loop: context.loop)
        self.upgrade = upgrade
        self.shaping = shaping
    }

    var eventContext: EventContext {
        EventContext(connectionID: summary.connectionID, requestID: id, taskID: taskID)
    }

    func start() {
        environment.counters.exchangesInFlight.add(1, ordering: .relaxed)
        records.created(head, requestID: id, url: origin.authority)
        if let match = environment.shapingRules.match(for: origin.ruleKey) {
            let shaping = ExchangeShaping(rule: match.rule)
            self.shaping = shaping
            summary.shaping = shaping.applied
            environment.emit(eventContext, TunnelDidShape(shaping: shaping.applied))
            let latency = shaping.latency
            if latency > 0 {
                waitingForLatency = true
                context.loop.execute(after: latency) { [weak self] in
                    guard let self, !isDone else { return }
                    waitingForLatency = false
                    openUpstream()
                }
                return
            }
        }
        openUpstream()
    }

    /// A blind tunnel whose client speaks cleartext WebSocket gets its messages read too.
    private func sniffForWebSocket() {
        guard upgrade == nil, let settings = environment.stagePlan.messageSettings else { return }
        let capture = environment.stagePlan.messageCapture(for: origin.ruleKey)
        sniffer = TunnelSniffer { [unowned self] fields in
            summary.upgrade = "websocket"
            return WebSocketWatch(settings: settings, switchFields: fields, environment: environment, eventContext: eventContext,
                                  capture: capture)
        }
    }

    private func openUpstream() {
        context.delegate.upstream(eventContext, didCreateFor: origin, attempt: 1)
        summary.attempts = 1
        metrics.proxy = origin.parent?.description
        // Lookout asks for no credentials: any the client sent are for the parent (RFC 9110 §11.7.2).
        let clientAuthorization = !environment.asksForCredentials ? head.headerFields[.proxyAuthorization] : nil
        opening = UpstreamOpener(environment: environment.upstream, loop: context.loop, events: context.delegate)
            .open(origin, tunnel: true, clientAuthorization: clientAuthorization, for: self)
    }

    func openerDidConnect(_ connection: Connection, earlyBytes: [UInt8]) {
        opening = nil
        open(connection, earlyBytes: earlyBytes)
    }

    func openerDidFail(_ error: ProxyError) {
        opening = nil
        client.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: id))
        summary.status = error.status
        finish(error: error)
    }

    /// `earlyBytes`: what the origin sent right behind a parent proxy's 200 (a server-first
    /// protocol), passed on after the client's 200.
    private func open(_ connection: Connection, earlyBytes: [UInt8] = []) {
        metrics.upstreamConnectionID = connection.id
        metrics.requestStart = .now()
        if !alreadyEstablished { client.write(Tunnel.established) }
        summary.status = 200
        if summary.clientJA4 == nil { helloGatherer = FirstRecordGatherer() }
        sniffForWebSocket()
        relay(connection, after: earlyBytes)
    }

    /// The JA4 the ClientHello read before the tunnel gave.
    func setClientJA4(_ ja4: String?) { summary.clientJA4 = ja4 }

    /// Takes over a switched exchange's upstream connection; `upstreamLeftover` is what the
    /// origin sent right behind its 101.
    func adopt(_ connection: ByteStream, upstreamLeftover: [UInt8], capture: MessageCapture?) {
        if upgrade?.lowercased() == "websocket", let settings = environment.stagePlan.messageSettings {
            webSocket = WebSocketWatch(settings: settings, switchFields: summary.responseHeaders, environment: environment,
                                       eventContext: eventContext, capture: capture)
        }
        relay(connection, after: upstreamLeftover)
    }

    /// Relays, once the origin's bytes that came before the relay began are passed on.
    private func relay(_ connection: ByteStream, after leftover: [UInt8]) {
        var clientKeepsUp = true
        if !leftover.isEmpty {
            upstreamToClient += UInt64(leftover.count)
            clientKeepsUp = client.write(leftover)
            leftover.withUnsafeBytes { webSocket?.upstreamBytes($0) }
        }
        relay(connection, readUpstream: clientKeepsUp)
        if !initialClientBytes.isEmpty {
            // The ClientHello read before the tunnel opened goes first.
            clientToUpstream += UInt64(initialClientBytes.count)
            connection.write(initialClientBytes)
            initialClientBytes = []
        }
    }

    /// `readUpstream` false: the client is backed up; its drain resumes reading.
    private func relay(_ connection: ByteStream, readUpstream: Bool = true) {
        upstream = connection
        connection.delegate = self
        shaping?.paceTunnel(loop: context.loop,
                            toClient: { [unowned self] in client.write($0) },
                            clientReady: { [unowned self] in upstream?.resumeReading() },
                            toUpstream: { [unowned self] in upstream?.write($0) ?? true },
                            upstreamReady: { [unowned self] in client.resumeReading() })
        openedAt = .now()
        context.delegate.tunnel(eventContext, didOpenTo: origin.authority, address: connection.peerAddress?.description ?? "")
        if readUpstream { connection.resumeReading() } else { connection.pauseReading() }
        delegate.exchangeCanTakeInput()
        lastActivity = .now()
        armIdleCheck()
    }

    // MARK: - Client side (forwarded by ClientConnection)

    func clientDidRead(_ bytes: UnsafeRawBufferPointer) {
        guard let upstream, !isDone else { return }
        clientToUpstream += UInt64(bytes.count)
        lastActivity = .now()
        let accepted = shaping?.upload.map { $0.send(bytes) } ?? upstream.write(bytes)
        if !accepted { client.pauseReading() }
        webSocket?.clientBytes(bytes)
        if let sniffer { sniffed(sniffer) { $0.clientBytes(bytes) } }
        if var gatherer = helloGatherer {
            // Read from the first record as it passes, without terminating anything.
            if let ja4 = gatherer.ja4(after: bytes) { summary.clientJA4 = ja4 }
            helloGatherer = gatherer.isDone ? nil : gatherer
        }
    }

    /// Feeds the sniffer; once it finds a WebSocket the tunnel reads it, once it finds none it is dropped.
    private func sniffed(_ sniffer: TunnelSniffer, _ feed: (TunnelSniffer) -> Void) {
        feed(sniffer)
        if let watch = sniffer.watch {
            webSocket = watch
            self.sniffer = nil
        } else if sniffer.isOff {
            self.sniffer = nil
        }
    }

    func clientDidReadEOF() {
        // The client's half-close goes on behind the bytes still being paced toward the origin.
        afterPacing(shaping?.upload) { [unowned self] in
            clientFinished = true
            upstream?.shutdownWrite()
            if upstreamFinished || upstream == nil { finish(error: nil) }
        }
    }

    func clientDidDrain() {
        if let toClientPacer = shaping?.download, !toClientPacer.sinkDidDrain() { return }
        upstream?.resumeReading()
    }

    private func afterPacing(_ pacer: PacedSender?, _ work: @escaping () -> Void) {
        if let pacer { pacer.whenFlushed(work) } else { work() }
    }

    func clientDidFail(_ error: ProxyError) {
        clientBrokeOff = true
        finish(error: error)
    }

    func abort(_ error: ProxyError) {
        finish(error: error)
    }

    // MARK: - Operator

    /// What an operator sees of this tunnel now; nil once it has finished.
    func inFlightSnapshot(at now: Instant) -> InFlightExchange? {
        guard !isDone else { return nil }
        var snapshot = summary
        snapshot.end = now
        snapshot.upstream = metrics
        snapshot.tunnelBytesClientToUpstream = clientToUpstream
        snapshot.tunnelBytesUpstreamToClient = upstreamToClient
        snapshot.messages = webSocket?.summary
        let phase = openedAt != nil ? "relaying" : waitingForLatency ? "shaping_latency" : metrics.currentPhase
        return InFlightExchange(summary: snapshot, phase: phase)
    }

    /// Ends the tunnel for an operator: before it opened, the client gets the error response;
    /// after, both sides are reset, so neither takes the end for a clean one.
    func cancel(_ error: ProxyError) {
        guard !isDone else { return }
        if openedAt == nil && upgrade == nil {
            client.write(ErrorResponse.bytes(for: error, closeConnection: true, requestID: id))
            summary.status = error.status
        } else {
            clientBrokeOff = true
            upstreamBrokeOff = true
        }
        finish(error: error)
    }

    // MARK: - Upstream side

    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard !isDone else { return }
        upstreamToClient += UInt64(bytes.count)
        lastActivity = .now()
        let accepted = shaping?.download.map { $0.send(bytes) } ?? client.write(bytes)
        if !accepted { connection.pauseReading() }
        webSocket?.upstreamBytes(bytes)
        if let sniffer { sniffed(sniffer) { $0.upstreamBytes(bytes) } }
    }

    func connectionDidReadEOF(_ connection: ByteStream) {
        afterPacing(shaping?.download) { [unowned self] in
            upstreamFinished = true
            client.shutdownWrite()
            if clientFinished { finish(error: nil) }
        }
    }

    func connectionDidDrain(_ connection: ByteStream) {
        if let toUpstreamPacer = shaping?.upload, !toUpstreamPacer.sinkDidDrain() { return }
        client.resumeReading()
    }

    func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        upstream = nil
        upstreamBrokeOff = true
        finish(error: .upstreamFailed(reason: .closed(error.description)))
    }

    // MARK: - Idle timeout

    /// Checks every quarter of the limit rather than re-arming on every read.
    private func armIdleCheck() {
        let limit = environment.upstream.timeouts.tunnelIdle
        idleTimer.schedule(after: limit / 4) { [unowned self] in
            guard !isDone else { return }
            if Instant.now().milliseconds(since: lastActivity) / 1000 >= limit {
                finish(error: .clientFailed(reason: .tunnelIdleTimedOut(after: limit)))
            } else {
                armIdleCheck()
            }
        }
    }

    // MARK: - End

    private func finish(error: ProxyError?) {
        guard !isDone else { return }
        isDone = true
        idleTimer.invalidate()
        shaping?.cancelPacing()
        opening?.cancel()
        opening = nil
        if let upstream {
            self.upstream = nil
            if error == nil {
                upstream.closeAfterFlush()
            } else if clientBrokeOff {
                upstream.resetAfterFlush()
            } else {
                upstream.close()
            }
        }
        let end = Instant.now()
        // A switched exchange keeps its handshake's timings; its tunnel's length is the total.
        if upgrade == nil { metrics.responseEnd = end }
        summary.end = end
        summary.error = error
        summary.upstream = openedAt == nil ? nil : metrics
        summary.tunnelBytesClientToUpstream = clientToUpstream
        summary.tunnelBytesUpstreamToClient = upstreamToClient
        if let (messages, path) = webSocket?.finish() {
            summary.messages = messages
            if let path {
                var capture = summary.capture ?? CaptureSummary()
                capture.messages = path
                summary.capture = capture
            }
        }
        webSocket = nil
        sniffer = nil
        let duration = openedAt.map { end.milliseconds(since: $0) } ?? 0
        if openedAt != nil {
            context.delegate.tunnel(eventContext, didCloseAfter: duration, clientToUpstream: clientToUpstream,
                                    upstreamToClient: upstreamToClient, error: error, completesTask: upgrade == nil)
        } else if upgrade == nil {
            environment.emit(eventContext, TaskDidComplete(error: error))
        }
        environment.counters.exchangesInFlight.subtract(1, ordering: .relaxed)
        records.finish(summary)
        delegate.tunnelDidFinish(upstreamFailed: upstreamBrokeOff)
    }
}
