import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel

/// One upstream attempt of an exchange: get a connection (pooled or new), send the request, parse
/// and relay the response. It holds what to send as a value (`UpstreamRequest`) and what it needs
/// of the session as values (`UpstreamEnvironment`), never the exchange or the session: every step
/// is reported through its `UpstreamTaskDelegate`. The exchange calls down (`sendBody`,
/// `finishBody`, `resumeReading`, `cancel`).
package final class UpstreamTask: UpstreamOpenerClient, @unchecked Sendable {  // confined to `pool.loop.queue`
    package let id: UInt64
    package let attempt: Int
    package let request: UpstreamRequest
    package let environment: UpstreamEnvironment
    /// `request.origin`, kept apart so that reading it copies nothing.
    package let origin: Origin
    package let requestID: UInt64
    package let connectionID: UInt64
    /// The loop's idle and multiplexed connections; the task runs on its loop.
    package let pool: UpstreamConnectionPool
    /// The loop's monitors' side: connecting, reuse and trust events.
    package let events: any UpstreamEvents
    /// The attempt's owner, its exchange; held until the completion is reported, then let go.
    private var owner: (any UpstreamTaskDelegate)?
    /// Every step of this attempt is reported here, and only here.
    package var delegate: any UpstreamTaskDelegate { owner! }
    private var loop: EventLoop { pool.loop }

    private var upstream: UpstreamConnection?
    /// The origin's HTTP/2 connection this attempt has a stream on (instead of `upstream`).
    package var multiplexed: HTTP2UpstreamConnection?
    package var streamID: Int32 = 0
    /// Response body bytes passed to the exchange while it could not keep up: the stream's
    /// window reopens by them once it can (`resumeReading`).
    package var unconsumedBytes = 0
    /// This task opens the connection other tasks for the origin wait for (see the pool).
    private var opensForOthers = false
    /// Waiting for another task's connection to the origin to show whether it speaks HTTP/2.
    private var waitsForOpening = false
    private var mayWaitForOpening = true
    private var opening: OpenHandle?
    /// The upstream TLS handshake in progress.
    private var securing: TLSStream?
    private var parser: HTTPResponseParser
    /// This attempt's transaction; the opener records DNS and connect timings into it.
    package var metrics: TransactionMetrics
    package private(set) var receivedResponseBytes = false
    package var responseHeadReceived = false
    package var requestBodySent = false
    package var responseComplete = false
    package var readingPaused = false
    package var lastRead = Instant(nanoseconds: 0)
    package private(set) var isDone = false
    package var bodyBytesReceived: UInt64 = 0

    package init(id: UInt64, attempt: Int, request: UpstreamRequest, requestID: UInt64, connectionID: UInt64,
                 environment: UpstreamEnvironment, pool: UpstreamConnectionPool, events: any UpstreamEvents,
                 delegate: any UpstreamTaskDelegate) {
        self.id = id
        self.attempt = attempt
        self.request = request
        self.origin = request.origin
        self.environment = environment
        self.requestID = requestID
        self.connectionID = connectionID
        self.pool = pool
        self.events = events
        self.owner = delegate
        self.parser = HTTPResponseParser(limits: environment.parserLimits)
        self.metrics = TransactionMetrics(fetchStart: .now())
        metrics.url = request.url
    }

    package var eventContext: EventContext {
        EventContext(connectionID: connectionID, requestID: requestID, taskID: id)
    }

    // MARK: - Connection

    /// Where idle connections for this request are kept: the origin, or for a plain request
    /// through a parent the parent itself (any origin's plain requests can share it).
    private var poolKey: Origin {
        if let parent = origin.parent, parent.forwardsPlainRequests, !origin.isSecure { return .parentHop(parent) }
        return origin
    }

    package func start() {
        metrics.proxy = origin.parent?.description
        let multiplexing = mayUseHTTP2
        if multiplexing, let shared = pool.multiplexedConnection(for: origin) {
            useStream(on: shared)
            return
        }
        if let pooled = pool.take(poolKey) {
            metrics.isReusedConnection = true
            events.upstream(eventContext, didReuse: pooled.connection)
            use(pooled)
            return
        }
        if multiplexing {
            if pool.isOpening(origin) {
                if mayWaitForOpening {
                    // The connection being opened may carry this request too (RFC 9113 §9.1).
                    waitsForOpening = true
                    pool.waitForOpening(origin) { [weak self] in self?.resumeAfterOpening() }
                    return
                }
            } else {
                pool.beginOpening(origin)
                opensForOthers = true
            }
        }
        opening = UpstreamOpener(environment: environment, loop: loop, events: events).open(origin, tunnel: origin.isSecure, for: self)
    }

    /// Whether this attempt may go over HTTP/2: https origins offered `h2` in ALPN (unless known
    /// to pick HTTP/1.1), cleartext origins in `http2.upstream_h2c_hosts` (prior knowledge, RFC
    /// 9113 §3.3, never through a parent). A protocol switch (`Upgrade`) needs HTTP/1.1 (§8.6).
    private var mayUseHTTP2: Bool {
        if request.asksForUpgrade { return false }
        if origin.isSecure { return environment.http2.upstream && !pool.speaksOnlyHTTP1(origin) }
        return usesPriorKnowledge
    }

    private var usesPriorKnowledge: Bool {
        let hosts = environment.http2.upstreamH2CHosts
        return !hosts.isEmpty && !origin.isSecure && origin.parent == nil && !request.asksForUpgrade
            && hosts.contains { $0.matches(origin.host) }
    }

    /// The connection another task was opening negotiated (or failed): try again, without waiting.
    private func resumeAfterOpening() {
        guard !isDone, waitsForOpening else { return }
        waitsForOpening = false
        mayWaitForOpening = false
        start()
    }

    /// Leaves telling the waiting tasks to someone else (the new HTTP/2 connection); true if
    /// there was anything to tell.
    package func handOverOpening() -> Bool {
        defer { opensForOthers = false }
        return opensForOthers
    }

    /// Tells the tasks waiting on this one's connection what it turned out to be.
    package func finishOpeningForOthers(speaksHTTP2: Bool?) {
        guard opensForOthers else { return }
        opensForOthers = false
        pool.finishOpening(origin, speaksHTTP2: speaksHTTP2)
    }

    package func openerDidConnect(_ connection: Connection, earlyBytes: [UInt8]) {
        opening = nil
        guard earlyBytes.isEmpty else {
            // Before our first byte the origin has nothing to say, in TLS or in HTTP/1.1.
            connection.close()
            complete(.upstreamFailed(reason: .malformedResponse("the origin sent bytes before the request")))
            return
        }
        if origin.isSecure {
            secure(connection)
        } else if usesPriorKnowledge {
            startHTTP2(on: connection, tls: nil)
        } else {
            use(UpstreamConnection(connection: connection, origin: poolKey))
        }
    }

    package func openerDidFail(_ error: ProxyError) {
        opening = nil
        complete(error)
    }

    // MARK: - TLS

    /// Runs the TLS handshake, then lets the host's trust rule judge the presented chain.
    private func secure(_ connection: Connection) {
        let serverName = SocketAddress(ip: origin.host, port: 0) == nil ? origin.host : nil
        let tls: TLSConnection
        do {
            // One engine (and session cache) for every ordinary request; a protocol switch
            // cannot go over HTTP/2, so its handshake does not offer it.
            let engine = request.asksForUpgrade ? environment.tlsHTTP1 : environment.tls
            tls = try engine.makeClientConnection(serverName: origin.host, sessionCacheKey: origin.authority)
            tls.clientIdentity = environment.trustManager.rule(for: origin.host).rule.clientIdentity
        } catch {
            connection.close()
            complete(.upstreamFailed(reason: .tlsHandshakeFailed(error.description)))
            return
        }
        let stream = TLSStream(transport: connection, tls: tls)
        stream.fingerprintsServerHello = true
        securing = stream
        metrics.secureConnectionStart = .now()
        stream.startHandshake(timeout: environment.timeouts.tlsHandshake) { [weak self] result in
            guard let self else { return }
            securing = nil
            guard !isDone else {
                stream.close()
                return
            }
            switch result {
            case .failure(.timedOut(let after)):
                complete(.upstreamFailed(reason: .tlsHandshakeTimedOut(after: after)))
            case .failure(let failure):
                complete(.upstreamFailed(reason: .tlsHandshakeFailed(failure.description)))
            case .success:
                evaluateTrust(stream, serverName: serverName)
            }
        }
    }

    private func evaluateTrust(_ stream: TLSStream, serverName: String?) {
        let host = origin.host
        let rule = environment.trustManager.rule(for: host)
        events.task(self, didReceiveChallengeFor: host, rule: rule.ruleName, evaluator: rule.rule.evaluator.name)
        let evaluation = environment.trustManager.evaluate(stream.tls.peerCertificateChain, host: host,
                                                       stapledOCSPResponse: stream.tls.stapledOCSPResponse)
        let decision = TrustDecision(host: host, evaluation: evaluation)
        events.task(self, didEvaluateServerTrust: decision)
        metrics.secureConnectionEnd = .now()
        var details = UpstreamTLSDetails(version: stream.tls.negotiatedProtocolVersion ?? "", cipher: stream.tls.cipherSuite ?? "",
                                         serverName: serverName, applicationProtocol: stream.tls.applicationProtocol,
                                         resumed: stream.tls.didResumeSession, trust: decision)
        details.ja4s = stream.serverJA4S
        details.leafNotAfter = stream.tls.peerCertificateChain.first?.notAfter
        details.clientCertificateRequested = stream.tls.clientCertificateRequested
        details.clientCertificate = stream.tls.clientCertificateSent.map {
            UpstreamTLSDetails.ClientCertificate(subject: $0.subject, sha256: $0.sha256Fingerprint)
        }
        let shared = ValueBox(details)
        metrics.tlsBox = shared
        if !evaluation.allowsConnection, let error = evaluation.error {
            // Nothing was sent on this connection, and nothing will be.
            stream.close()
            complete(.serverTrustEvaluationFailed(reason: error))
            return
        }
        if details.applicationProtocol == "h2" {
            startHTTP2(on: stream, tls: shared)
            return
        }
        finishOpeningForOthers(speaksHTTP2: false)
        use(UpstreamConnection(connection: stream, origin: origin, tls: shared))
    }

    private func use(_ connection: UpstreamConnection) {
        upstream = connection
        metrics.tlsBox = connection.tls
        connection.attach(self)
        metrics.remoteAddress = connection.remoteAddressText
        metrics.localAddress = connection.localAddressText
        metrics.upstreamConnectionID = connection.connection.id
        parser.expectResponse(to: request.method)
        parser.swapFieldRecall(with: &connection.fieldRecall)
        metrics.requestStart = .now()
        var headBytes = 0
        connection.connection.write { out in
            let start = out.count
            HTTPSerializer.appendRequestHead(into: &out, method: request.method, target: request.target, version: .http1_1,
                                             headerFields: request.fields)
            headBytes = out.count - start
        }
        metrics.requestHeaderBytes = UInt64(headBytes)
        armFirstByteTimer()
        delegate.taskIsReadyForBody(self)
    }

    // MARK: - Request body

    /// Sends body bytes; false when the upstream is backed up (wait for `upstreamDidDrain`).
    package func sendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if multiplexed != nil { return sendBodyOnStream(bytes) }
        guard let connection = upstream?.connection, !isDone else { return true }
        metrics.requestBodyBytes += UInt64(bytes.count)
        let accepted: Bool
        if request.bodyIsChunked {
            connection.write(HTTPSerializer.chunkHeader(length: bytes.count))
            connection.write(bytes)
            accepted = connection.write(HTTPSerializer.crlf)
        } else {
            accepted = connection.write(bytes)
        }
        delegate.task(self, didSendBodyData: bytes.count)
        return accepted
    }

    package func finishBody(trailers: HTTPFields?) {
        if multiplexed != nil {
            finishBodyOnStream(trailers: trailers)
            return
        }
        guard let connection = upstream?.connection, !isDone, !requestBodySent else { return }
        if request.bodyIsChunked {
            connection.write(HTTPSerializer.lastChunk(trailers: trailers))
        }
        requestBodySent = true
        metrics.requestEnd = .now()
    }

    package func upstreamDidDrain() {
        guard !isDone else { return }
        delegate.taskDidDrainRequestBody(self)
    }

    // MARK: - Response

    /// The first response bytes start the response phase (and, on HTTP/1.1, the idle timer).
    package func noteResponseBytes() {
        lastRead = .now()
        guard !receivedResponseBytes else { return }
        receivedResponseBytes = true
        metrics.responseStart = lastRead
        if upstream != nil { armIdleTimer() }
    }

    package func upstreamDidRead(_ bytes: UnsafeRawBufferPointer) {
        guard !isDone else { return }
        noteResponseBytes()
        var offset = 0
        while !isDone && !responseComplete {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let consumed: Int
            var parsed: HTTPParseEvent<ResponseHead>?
            do {
                (consumed, parsed) = try parser.parse(slice)
            } catch {
                complete(ProxyError(responseParseError: error))
                return
            }
            offset += consumed
            // Taken out, not bound: a binding would leave `parsed` a second owner of the head.
            guard let event = parsed.take() else { break }
            handle(event, in: slice)
            if !isDone && parser.isUpgraded {
                // What followed the 101 in this read is already the new protocol.
                switchProtocols(leftover: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                return
            }
        }
        if responseComplete && offset < bytes.count {
            // Bytes after a complete response: the connection is out of step, never reuse it.
            upstream?.close()
            upstream = nil
        }
    }

    /// The event is consumed so that the head reaches the exchange with no other owner: the
    /// exchange edits its fields (hop-by-hop removal, Via), and a second owner here made each
    /// response copy them all first (copy-on-write).
    private func handle(_ event: consuming HTTPParseEvent<ResponseHead>, in slice: UnsafeRawBufferPointer) {
        switch consume event {
        case .head(let head):
            metrics.responseHeaderBytes += UInt64(head.headLength)
            if head.status == 101 {
                guard request.asksForUpgrade else {
                    // A switch nobody asked for (RFC 9110 §15.2.2): the bytes that follow would not be HTTP.
                    complete(.upstreamFailed(reason: .malformedResponse("101 Switching Protocols without an Upgrade request")))
                    return
                }
                responseHeadReceived = true
                metrics.statusCode = head.status
                // The parser stops after the 101; `upstreamDidRead` hands the connection over.
                _ = delegate.task(self, didReceiveResponse: head)
                return
            }
            if head.status < 200 {
                delegate.task(self, didReceiveInformational: head)
                return
            }
            responseHeadReceived = true
            metrics.statusCode = head.status
            reuseAllowed = head.keepAlive
            let closeDelimited = if case .untilClose = head.framing { true } else { false }
            if delegate.task(self, didReceiveResponse: consume head) == .abandon {
                // The exchange holds this response back (a retry or a followed redirect follows):
                // a short body is read and dropped so the connection can serve the next attempt,
                // anything longer (or close-delimited) closes it.
                if closeDelimited { abandon() } else { isDiscardingBody = true }
            }
        case .body(let range):
            let bytes = UnsafeRawBufferPointer(rebasing: slice[range])
            bodyBytesReceived += UInt64(bytes.count)
            metrics.responseBodyBytes = bodyBytesReceived
            if isDiscardingBody {
                if bodyBytesReceived > Self.maxDiscardedBodyBytes { abandon() }
                return
            }
            let clientKeepsUp = delegate.task(self, didReceiveData: bytes, total: bodyBytesReceived)
            if !clientKeepsUp && !readingPaused {
                readingPaused = true
                upstream?.connection.pauseReading()
                delegate.taskDidSuspend(self)
            }
        case .end(let trailers):
            metrics.responseEnd = .now()
            responseComplete = true
            if !isDiscardingBody { delegate.task(self, didFinishResponseWith: trailers) }
            // An origin that answered before the whole request body was sent cannot be reused:
            // the rest of the body would be read as the next request.
            if !requestBodySent { reuseAllowed = false }
            finishSuccessfully()
        }
    }

    private var reuseAllowed = true
    /// The exchange held the response back: its body is read and dropped, not relayed.
    private var isDiscardingBody = false
    /// A held-back body longer than this closes the connection instead of being read.
    package static let maxDiscardedBodyBytes: UInt64 = 64 * 1024

    // MARK: - Protocol switch

    private var switchedStream: (stream: ByteStream, leftover: [UInt8])?

    /// After the 101 that answered the request's Upgrade, the upstream connection, no longer
    /// HTTP, leaves the task (never the pool) for the exchange to relay; the task ends
    /// successfully with the 101 as its response.
    private func switchProtocols(leftover: UnsafeRawBufferPointer) {
        guard let upstream else { return }
        self.upstream = nil
        upstream.detach()
        metrics.responseEnd = .now()
        responseComplete = true
        switchedStream = (upstream.connection, Array(leftover))
        complete(nil)
    }

    /// Hands over the switched connection once (to the exchange, from `taskDidComplete`).
    package func takeSwitchedStream() -> (stream: ByteStream, leftover: [UInt8])? {
        defer { switchedStream = nil }
        return switchedStream
    }

    package func resumeReading() {
        guard readingPaused, !isDone else { return }
        readingPaused = false
        if let multiplexed {
            multiplexed.consume(stream: streamID, count: unconsumedBytes)
            unconsumedBytes = 0
        } else {
            upstream?.connection.resumeReading()
        }
        delegate.taskDidResume(self)
    }

    package func upstreamDidReadEOF() {
        guard !isDone else { return }
        do {
            if let event = try parser.finish() {
                handle(event, in: UnsafeRawBufferPointer(start: nil, count: 0))
                return
            }
            complete(.upstreamFailed(reason: .closed(responseHeadReceived ? "in the middle of the body" : "before sending a response")))
        } catch {
            complete(ProxyError(responseParseError: error))
        }
    }

    package func upstreamDidFail(_ error: SocketError) {
        guard !isDone else { return }
        let tls = upstream?.tls
        upstream = nil  // already closed by the connection
        // In TLS 1.3 the server judges the client certificate after the client's handshake is
        // done (RFC 8446 §4.4.2.4): a refusal is an alert on the first read. Before any response
        // byte, on a connection whose handshake carried a CertificateRequest, it is the handshake
        // that failed.
        if let tls, tls.value.clientCertificateRequested, !metrics.isReusedConnection, !responseHeadReceived, error.call == "TLS read",
           let detail = error.detail {
            complete(.upstreamFailed(reason: .tlsHandshakeFailed(detail)))
            return
        }
        complete(.upstreamFailed(reason: .closed(error.description)))
    }

    // MARK: - Timers

    /// What the connection's timer is waiting for on this task's behalf.
    private enum TimerPurpose { case firstByte, idle }
    private var timerPurpose = TimerPurpose.firstByte

    /// The upstream connection's timer fired while this task was using it.
    package func timerFired() {
        switch timerPurpose {
        case .firstByte:
            guard !isDone, !receivedResponseBytes else { return }
            complete(.upstreamFailed(reason: .firstByteTimedOut(after: environment.timeouts.upstreamFirstByte)))
        case .idle:
            idleTimerFired(limit: environment.timeouts.upstreamIdle)
        }
    }

    private func armFirstByteTimer() {
        timerPurpose = .firstByte
        upstream?.timer.schedule(after: environment.timeouts.upstreamFirstByte)
    }

    private func armIdleTimer() {
        timerPurpose = .idle
        upstream?.timer.schedule(after: environment.timeouts.upstreamIdle)
    }

    private func idleTimerFired(limit: Double) {
        guard !isDone else { return }
        if readingPaused {
            // A slow client, not a slow origin: wait for it.
            armIdleTimer()
            return
        }
        let quiet = Instant.now().milliseconds(since: lastRead) / 1000
        if quiet + 0.01 < limit {
            upstream?.timer.schedule(after: limit - quiet)
            return
        }
        complete(.upstreamFailed(reason: .idleTimedOut(after: limit)))
    }

    // MARK: - Completion

    package func finishSuccessfully() {
        guard !isDone else { return }
        if let upstream {
            self.upstream = nil
            if reuseAllowed && requestBodySent && upstream.isUsable && !environment.isShuttingDown {
                parser.swapFieldRecall(with: &upstream.fieldRecall)
                pool.release(upstream)
            } else {
                upstream.close()
            }
        }
        complete(nil)
    }

    /// The response was held back: close the connection and end the attempt without an error.
    private func abandon() {
        metrics.responseEnd = .now()
        upstream?.close()
        upstream = nil
        complete(nil)
    }

    /// Stops the task; its completion is recorded (events, the map) but not reported to the
    /// exchange, which is the one stopping it.
    package func cancel() {
        guard !isDone else { return }
        opening?.cancel()
        opening = nil
        securing?.close()
        securing = nil
        upstream?.close(abortive: true)
        upstream = nil
        complete(nil, reported: false)
    }

    package func complete(_ error: ProxyError?, reported: Bool = true) {
        guard !isDone else { return }
        isDone = true
        opening?.cancel()
        opening = nil
        securing?.close()
        securing = nil
        finishOpeningForOthers(speaksHTTP2: nil)
        if let multiplexed {
            // The stream is still open (an error, a cancel, a held-back response, or a response
            // that ended before the request body): the origin is told to stop (RFC 9113 §8.1).
            self.multiplexed = nil
            multiplexed.cancel(stream: streamID)
        }
        if error != nil, let upstream {
            self.upstream = nil
            upstream.close(abortive: true)
        }
        if metrics.responseEnd == nil && metrics.responseStart != nil { metrics.responseEnd = .now() }
        metrics.errorCode = error?.code
        delegate.task(self, didCompleteWith: error, metrics: metrics, notifyExchange: reported)
        owner = nil
    }
}
