import HTTPTypes
import LookoutHTTP
import LookoutHTTP2
import LookoutIO
import LookoutModel
import LookoutUpstream

/// What an intercepted connection's HTTP/2 side tells the connection that owns it.
protocol HTTP2ClientSideDelegate: AnyObject {
    /// The HTTP/2 connection is over (both sides done after a GOAWAY, or it failed): close the
    /// socket once what is queued went out, with `reason` for the connection's record.
    func http2ClientSideDidEnd(reason: String)
}

/// A client connection that speaks HTTP/2 to Lookout: an intercepted one that negotiated `h2`
/// (RFC 9113 §3.2), toward the CONNECT's origin, or a cleartext one that asked for `Upgrade: h2c`
/// (RFC 7540 §3.2), whose streams name their origins as proxy requests do (`HTTP2StreamRouting`).
/// nghttp2 speaks the protocol, and every stream becomes an exchange through the same pipeline as
/// HTTP/1.1 — policies, cache, capture, events.
///
/// Bytes flow one way through here: the socket's reads go into nghttp2, the frames it queues go out
/// once the loop's batch of events is handled (`scheduleFlush`), never from inside one of its
/// callbacks. While the socket is backed up nothing more is read, so the client cannot queue work
/// faster than it takes answers.
final class HTTP2ClientSide: HTTP2ServerSessionDelegate, LoopTimerOwner, @unchecked Sendable {  // confined to `stream.loop.queue`
    let protocolSession: HTTP2ServerSession
    private let stream: ByteStream
    /// What the streams' exchanges are given.
    private let environment: ExchangeEnvironment
    /// `timeouts.client_idle`: an idle connection, or a stream whose window stays shut, ends.
    private let clientIdle: Double
    /// `access`: methods and destinations refused per stream.
    private var access: AccessPolicy
    private let context: LoopContext
    private var records: ExchangeRecords
    private var routing: HTTP2StreamRouting
    /// Who the client is, for each stream's egress policy decision.
    private let identity: ClientIdentity
    private unowned let delegate: HTTP2ClientSideDelegate
    private var streams = IDTable<Int32, HTTP2ClientStream>()
    private var flushScheduled = false
    private var outputBlocked = false
    private var ended = false
    private(set) var requestsServed = 0
    private let timer: LoopTimer
    private var lastActivity = Instant.now()
    /// Per stream with a response waiting on the client's window: when the window last moved.
    private var stalledSince = IDTable<Int32, (sent: UInt64, since: Instant)>()
    /// The last `:authority` found to name the intercepted origin (`namesOrigin`).
    private var lastMatchedAuthority: String?
    /// Intercepted: "https://host[:port]", which every stream's URL starts with.
    private let originURLPrefix: String

    init(stream: ByteStream, environment: ExchangeEnvironment, http2: HTTP2Settings, access: AccessPolicy,
         context: LoopContext, records: ExchangeRecords, routing: HTTP2StreamRouting, identity: ClientIdentity,
         delegate: HTTP2ClientSideDelegate) throws {
        var settings = HTTP2ServerSettings()
        settings.maxConcurrentStreams = UInt32(http2.maxConcurrentStreams)
        settings.maxHeaderListBytes = http2.maxHeaderListBytes
        if case .forwardProxy = routing { settings.acceptsAbsolutePaths = true }
        self.protocolSession = try HTTP2ServerSession(settings: settings)
        self.stream = stream
        self.environment = environment
        self.clientIdle = environment.upstream.timeouts.clientIdle
        self.access = access
        self.context = context
        self.records = records
        self.routing = routing
        self.identity = identity
        if case .intercepted(let origin) = routing { originURLPrefix = origin.url(path: "") } else { originURLPrefix = "" }
        self.delegate = delegate
        self.timer = LoopTimer(loop: stream.loop)
        protocolSession.delegate = self
        timer.setOwner(self)
    }

    /// Sends the server preface (SETTINGS) and starts reading the client's.
    func start() {
        flush()
        stream.resumeReading()
        armTimer()
    }

    /// After `Upgrade: h2c` (RFC 7540 §3.2), before the 101 goes out: `settingsPayload` is the
    /// request's `HTTP2-Settings`, decoded. Throws when nghttp2 finds it is not a SETTINGS payload.
    func acceptUpgrade(settingsPayload: [UInt8], headRequest: Bool) throws {
        try protocolSession.upgrade(settingsPayload: settingsPayload, headRequest: headRequest)
    }

    /// After the 101: the HTTP/1.1 request that asked for the upgrade is stream 1, complete
    /// (half-closed toward Lookout), and its response goes out on HTTP/2 after the server
    /// preface. `early` is what the client sent behind the request: the start of its preface.
    func startUpgraded(head: RequestHead, requestID: UInt64, origin: Origin, path: String, url: String, early: [UInt8]) {
        requestsServed += 1
        let clientStream = HTTP2ClientStream(id: 1, side: self)
        streams[1] = clientStream
        clientStream.requestComplete = true
        let exchange = Exchange(id: requestID, context: context, client: clientStream,
                                delegate: clientStream, records: records, head: head, origin: origin,
                                path: path, url: url, kind: routing.kind, clientStreamID: 1)
        exchange.summary.upgrade = "h2c"
        clientStream.run(exchange)
        clientStream.exchange?.clientFinishedBody(trailers: nil)
        start()
        if !early.isEmpty { early.withUnsafeBytes { didRead($0) } }
    }

    // MARK: - Socket (called by the connection)

    func didRead(_ bytes: UnsafeRawBufferPointer) {
        guard !ended else { return }
        lastActivity = .now()
        let servedBefore = requestsServed
        do {
            try protocolSession.receive(bytes)
        } catch {
            // A fatal protocol error (a bad preface, too many CONTINUATIONs): the session queued a
            // GOAWAY PROTOCOL_ERROR, which goes out (and is recorded, `didEndWith`), then the socket closes.
            failAllStreams(.clientFailed(reason: .closed("HTTP/2 connection error: \(error)")))
            flush()
            end(reason: "http2_error")
            return
        }
        flush()
        // The requests this read opened leave for their origins now, not after the rest of the
        // batch (often the origin's answers to earlier streams): the origin works on them on
        // the other core meanwhile, and the write is the one the batch's end would make. Reads
        // of request bodies alone do not, so an upload's writes stay gathered per batch.
        if requestsServed != servedBefore { stream.loop.sendGatheredSoFar() }
    }

    func didDrain() {
        outputBlocked = false
        flush()
        if !outputBlocked && !ended { stream.resumeReading() }
    }

    /// The client's side of the socket ended or failed: every open stream fails with `error`.
    func clientDidEnd(_ error: ProxyError) {
        failAllStreams(error)
        ended = true
        timer.invalidate()
    }

    /// Shutdown (RFC 9113 §6.8): GOAWAY names the last stream that will be served; those finish,
    /// then the connection closes.
    func beginShutdown() {
        guard !ended else { return }
        protocolSession.goAway()
        flush()
    }

    /// The grace period is over: what is still running ends now.
    func forceClose() {
        for stream in streams.values {
            stream.exchange?.abort(.sessionUnavailable(reason: .shuttingDown))
        }
        protocolSession.terminate(.noError, reason: "shutdown")
        flush()
        ended = true
        timer.invalidate()
    }

    var isIdle: Bool { streams.isEmpty }

    // MARK: - Output

    /// Frames go out once the loop has delivered this batch's events, in the batch's own write:
    /// a response head, its first bytes and the END_STREAM of a short answer leave together, and
    /// an answer that arrived in this batch does not wait for the loop's next turn.
    func scheduleFlush() {
        guard !flushScheduled, !ended else { return }
        flushScheduled = true
        // Held strongly until the turn ends (`flush` checks whether it still has a connection):
        // a weak reference would give this object a side table, and every retain and release of
        // it, dozens per exchange, would take the slower path through that table.
        stream.loop.executeAtBatchEnd { [self] in
            flushScheduled = false
            flush()
        }
    }

    private func flush() {
        guard !ended else { return }
        if !outputBlocked {
            do {
                let keptUp = try protocolSession.writeOutput { [stream] bytes in stream.write(bytes) }
                if !keptUp {
                    // The socket's queue is full: read nothing until it drains (`didDrain`).
                    outputBlocked = true
                    stream.pauseReading()
                }
            } catch {
                end(reason: "http2_error")
                return
            }
        }
        if !protocolSession.isActive { end(reason: protocolSession.abuse == nil ? "closed" : "http2_enhance_your_calm") }
    }

    private func end(reason: String) {
        guard !ended else { return }
        failAllStreams(.clientFailed(reason: .closed("the HTTP/2 connection ended")))
        ended = true
        timer.invalidate()
        delegate.http2ClientSideDidEnd(reason: reason)
    }

    private func failAllStreams(_ error: ProxyError) {
        let open = streams.values
        streams = [:]
        for stream in open { stream.closed(error) }
    }

    // MARK: - Timers

    private var tick: Double { max(0.05, min(1, clientIdle / 4)) }

    private func armTimer() { timer.schedule(after: tick) }

    /// Closes a connection idle for `timeouts.client_idle`, and resets streams whose client kept
    /// its window shut that long (a zero-window stall holds an upstream response hostage).
    func loopTimerFired() {
        guard !ended else { return }
        let limit = clientIdle
        let now = Instant.now()
        if streams.isEmpty {
            if now.milliseconds(since: lastActivity) / 1000 >= limit {
                protocolSession.goAway()
                flush()
                end(reason: "idle_timeout")
                return
            }
        } else {
            for (id, clientStream) in streams {
                guard let progress = protocolSession.bodyProgress(stream: id), progress.queued > 0,
                      protocolSession.peerWindow(stream: id) <= 0 else {
                    stalledSince[id] = nil
                    continue
                }
                if let stall = stalledSince[id], stall.sent == progress.sent {
                    if now.milliseconds(since: stall.since) / 1000 >= limit {
                        stalledSince[id] = nil
                        protocolSession.resetStream(id, code: .cancel, afterQueuedBody: false)
                        streams[id] = nil
                        clientStream.closed(.clientFailed(reason: .closed(
                            "the client kept HTTP/2 stream \(id)'s window shut for \(Int(limit)) s")))
                    }
                } else {
                    stalledSince[id] = (progress.sent, now)
                }
            }
            flush()
        }
        armTimer()
    }

    // MARK: - HTTP2ServerSessionDelegate

    func http2Session(_ protocolSession: HTTP2ServerSession, didReceiveRequest headers: [HTTP2Header], stream id: Int32,
                      endStream: Bool, fieldBytes: Int) {
        requestsServed += 1
        adoptCurrentEnvironment()
        let requestID = environment.makeRequestID()
        let clientStream = HTTP2ClientStream(id: id, side: self)
        streams[id] = clientStream
        let translated = HTTP2MessageTranslation.requestHead(headers, endStream: endStream, fieldBytes: fieldBytes)
        switch consume translated {
        case .failure(let problem):
            let error: ProxyError
            switch problem {
            case .connectNotSupported: error = .requestRejected(reason: .connectOverHTTP2)
            case .missingAuthority: error = .requestRejected(reason: .missingHost("HTTP/2 request without :authority"))
            case .invalidField(let name): error = .requestRejected(reason: .malformedRequest("HTTP/2 field \(name)"))
            }
            let method = headers.first { $0.name == ":method" }?.value ?? ""
            refuse(clientStream, requestID: requestID, method: method, url: routing.fallbackURL, error: error)
        case .success(let (head, authority)):
            switch route(head, authority: authority, headers: headers) {
            case .failure(let error):
                refuse(clientStream, requestID: requestID, head: head, url: refusedURL(head, authority: authority, headers: headers),
                       error: error)
            case .success(let route):
                // Each stream is a request of its own to the policy: its method, its place among
                // the role's rate and in-flight ones (an intercepted CONNECT counted none).
                var streamRecords = records
                if let (decision, refusal) = policyDecision(route) {
                    streamRecords.policy = decision
                    if let refusal {
                        refuse(clientStream, requestID: requestID, head: route.head, url: route.url, error: refusal,
                               records: streamRecords)
                        return
                    }
                } else {
                    streamRecords.policy = nil
                }
                let exchange = Exchange(id: requestID, context: context, client: clientStream,
                                        delegate: clientStream, records: streamRecords, head: route.head,
                                        origin: route.origin, path: route.path, url: route.url, kind: routing.kind,
                                        clientStreamID: id)
                clientStream.run(exchange)
            }
        }
    }

    /// A reload replaced the loop's environment: the streams from now on run under it (those
    /// running keep the records they were given).
    private func adoptCurrentEnvironment() {
        let current = context.clients
        guard current.exchanges !== records.environment else { return }
        records.environment = current.exchanges
        access = current.access
        if case .forwardProxy = routing { routing = .forwardProxy(current) }
    }

    /// The egress policy's decision for a stream's request; nil without a policy.
    private func policyDecision(_ route: HTTP2StreamRoute) -> (PolicyDecision, ProxyError?)? {
        context.rules.policy.map {
            identity.streaming(as: route.user).decision(by: $0, method: route.head.method.rawValue, host: route.origin.ruleKey)
        }
    }

    /// What a refused stream's record names: the URL it asked for.
    private func refusedURL(_ head: RequestHead, authority: String?, headers: [HTTP2Header]) -> String {
        guard case .forwardProxy = routing else { return originURLPrefix + head.rawTarget }
        return HTTP2StreamRouting.forwardURL(head.rawTarget, authority: authority,
                                             scheme: headers.first { $0.name == ":scheme" }?.value)
    }

    /// Where the stream's request goes, or why it is refused.
    private func route(_ head: RequestHead, authority: String?, headers: [HTTP2Header]) -> Result<HTTP2StreamRoute, ProxyError> {
        switch routing {
        case .forwardProxy(let client):
            let scheme = headers.first { $0.name == ":scheme" }?.value
            return HTTP2StreamRouting.forwardRoute(head, authority: authority, scheme: scheme, environment: client,
                                                    rules: context.rules)
        case .intercepted(let origin):
            if let authority, !namesOrigin(authority, origin: origin) {
                return .failure(.requestRejected(reason: .misdirectedRequest(authority: authority, origin: origin.authority)))
            }
            if let refusal = access.refusal(method: head.method.rawValue, host: origin.ruleKey) { return .failure(refusal) }
            return .success(HTTP2StreamRoute(head: head, origin: origin, path: head.rawTarget,
                                             url: originURLPrefix + head.rawTarget))
        }
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, didReceiveOversizedRequest id: Int32, fieldBytes: Int) {
        requestsServed += 1
        let clientStream = HTTP2ClientStream(id: id, side: self)
        streams[id] = clientStream
        refuse(clientStream, requestID: environment.makeRequestID(), method: "", url: routing.fallbackURL,
               error: .requestRejected(reason: .headerListTooLarge(limit: protocolSession.settings.maxHeaderListBytes)))
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, didReceiveData bytes: UnsafeRawBufferPointer, stream id: Int32) {
        guard let clientStream = streams[id], let exchange = clientStream.exchange else {
            // Nobody takes it (a refused or finished request): the window reopens at once.
            protocolSession.consume(stream: id, count: bytes.count)
            return
        }
        exchange.clientSentBody(bytes)
        if exchange.acceptsRequestBody || clientStream.exchange == nil {
            protocolSession.consume(stream: id, count: bytes.count)
        } else {
            clientStream.unconsumedBytes += bytes.count
        }
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, didFinishRequest id: Int32, trailers: [HTTP2Header]?) {
        guard let clientStream = streams[id] else { return }
        clientStream.requestComplete = true
        clientStream.exchange?.clientFinishedBody(trailers: trailers.map(HTTP2MessageTranslation.fields))
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, didRejectMalformed id: Int32, reason: String) {
        let error = ProxyError.requestRejected(reason: .malformedRequest("HTTP/2 stream \(id): \(reason)"))
        if let clientStream = streams.removeValue(forKey: id) {
            clientStream.closed(error)
            return
        }
        // RFC 9113 §8.1.1: the stream was reset with PROTOCOL_ERROR before it became a request.
        records.refused(requestID: environment.makeRequestID(), method: "", url: routing.fallbackURL, httpVersion: "HTTP/2",
                        kind: routing.kind, error: error, status: nil, start: .now(), headWasRead: false,
                        clientStreamID: id)
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, didCloseStream id: Int32, code: HTTP2ErrorCode, byPeer: Bool) {
        stalledSince[id] = nil
        guard let clientStream = streams[id] else { return }
        if code == .noError && !byPeer && clientStream.responseEnded {
            // The whole response went out and the request was complete: the exchange may still
            // be settling its attempt (metrics, the pool); it ends on its own, and is forgotten then.
            clientStream.streamClosedCleanly()
            if clientStream.exchange == nil { streams[id] = nil }
            return
        }
        streams[id] = nil
        let detail = byPeer ? "the client reset HTTP/2 stream \(id) (\(code.registeredName))"
                            : "HTTP/2 stream \(id) closed (\(code.registeredName))"
        clientStream.closed(.clientFailed(reason: .closed(detail)))
    }

    /// A stream closed cleanly before its exchange finished: now it has.
    func streamExchangeDidFinish(_ clientStream: HTTP2ClientStream) {
        if streams[clientStream.id] === clientStream { streams[clientStream.id] = nil }
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, canSendMoreOn id: Int32) {
        streams[id]?.exchange?.clientDidDrain()
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32) {
        // nghttp2 stops accepting streams; those begun finish, then `isActive` turns false.
    }

    func http2Session(_ protocolSession: HTTP2ServerSession, didEndWith code: HTTP2ErrorCode, reason: String) {
        environment.emit(EventContext(connectionID: stream.id), ConnectionDidEndHTTP2(code: code.registeredName, reason: reason))
        failAllStreams(.clientFailed(reason: .closed("the connection ended with GOAWAY \(code.registeredName): \(reason)")))
    }

    // MARK: - Refusals

    /// Answers a stream's request with Lookout's error response, and writes its record.
    private func refuse(_ clientStream: HTTP2ClientStream, requestID: UInt64, head: RequestHead, url: String,
                        error: ProxyError, records streamRecords: ExchangeRecords? = nil) {
        records.created(head, requestID: requestID, url: url)
        refuse(clientStream, requestID: requestID, method: head.method.rawValue, url: url, error: error,
               records: streamRecords)
    }

    private func refuse(_ clientStream: HTTP2ClientStream, requestID: UInt64, method: String, url: String,
                        error: ProxyError, records streamRecords: ExchangeRecords? = nil) {
        clientStream.writeError(error, requestID: requestID)
        (streamRecords ?? records).refused(requestID: requestID, method: method, url: url, httpVersion: "HTTP/2", kind: routing.kind,
                        error: error, status: error.status, start: .now(), headWasRead: true, clientStreamID: clientStream.id)
    }

    /// Whether `authority` names the intercepted origin's host. The port is not compared: a
    /// client behind a port forward (or a relay) names the port it connected to, while a request
    /// for another host is one a coalescing client should send on a connection of its own.
    ///
    /// A client sends the same `:authority` on every stream of a connection, so the last one that
    /// matched is kept and a request naming it again is not parsed again.
    private func namesOrigin(_ authority: String, origin: Origin) -> Bool {
        if authority == lastMatchedAuthority { return true }
        var host = URLAuthority.host(in: authority)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        // Hosts compare without regard to ASCII case (RFC 3986 §3.2.2), here without two lowercased copies.
        let matches = host.utf8.elementsEqual(origin.host.utf8) { Self.asciiLowercase($0) == Self.asciiLowercase($1) }
        if matches { lastMatchedAuthority = authority }
        return matches
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    // MARK: - Operator

    func inFlightSnapshots(at now: Instant) -> [InFlightExchange] {
        streams.values.compactMap { $0.exchange.flatMap { InFlightExchange($0, at: now) } }.sorted { $0.summary.requestID > $1.summary.requestID }
    }

    func runs(exchange id: UInt64) -> Bool {
        streams.values.contains { $0.exchange?.id == id }
    }

    func cancel(exchange id: UInt64, error: ProxyError) {
        streams.values.first { $0.exchange?.id == id }?.exchange?.cancel(error)
    }
}
