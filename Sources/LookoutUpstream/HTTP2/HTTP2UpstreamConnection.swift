import HTTPTypes
import LookoutHTTP
import LookoutHTTP2
import LookoutIO
import LookoutModel

/// An origin's HTTP/2 connection (RFC 9113): one socket carrying the exchanges of any clients on
/// this loop at once, each on a stream, up to the origin's SETTINGS_MAX_CONCURRENT_STREAMS. It sits
/// in the loop's pool for as long as it takes new streams, busy or not.
///
/// Bytes flow as on the client side: reads go into nghttp2, whose callbacks become calls on the
/// streams' tasks; frames go out once the loop's batch of events is handled (`scheduleFlush`).
/// A stream's response window reopens only as its task passes the body on, so a slow client holds
/// back its own stream.
/// While idle the connection is kept honest with PINGs (§6.7) and closed with a GOAWAY after
/// `pool.idle_timeout`.
package final class HTTP2UpstreamConnection: ConnectionDelegate, HTTP2ClientSessionDelegate, LoopTimerOwner, @unchecked Sendable {  // confined to `connection.loop.queue`
    package let connection: ByteStream
    /// The pool key.
    package let origin: Origin
    /// What the TLS handshake negotiated (nil for cleartext h2 with prior knowledge).
    package let tls: ValueBox<UpstreamTLSDetails>?
    package let remoteAddressText: String?
    package let localAddressText: String?
    package weak var pool: UpstreamConnectionPool?
    private let protocolSession: HTTP2ClientSession
    private let environment: UpstreamEnvironment
    /// Where the connection's own records go (GOAWAY, its end).
    private let events: any UpstreamEvents

    private struct OpenStream {
        package let delegate: HTTP2UpstreamStreamDelegate
        package let method: HTTPRequest.Method
    }

    /// Streams whose task still waits for their response.
    private var streams = IDTable<Int32, OpenStream>()
    /// Streams opened so far: a stream after the first is on a reused connection.
    package private(set) var streamsOpened = 0
    private var flushScheduled = false
    private var outputBlocked = false
    package private(set) var isClosed = false
    /// A GOAWAY arrived or Lookout is closing it: no new streams.
    private var goingAway = false
    private let timer: LoopTimer
    private var idleSince = Instant.now()
    private var lastPing = Instant.now()
    private let openedAt = Instant.now()
    private var pingOutstanding = false
    /// The origin's SETTINGS arrived: until then only the first stream is open, since its
    /// SETTINGS_MAX_CONCURRENT_STREAMS may be lower than any guess (RFC 9113 §6.5.2).
    private var settingsReceived = false
    /// Tasks for the origin wait for this connection (the pool's opening): they are told once
    /// its SETTINGS arrived, or it failed first.
    package var releasesWaitingTasks = false

    /// No more streams than this on one connection, whatever the origin allows.
    package static let maxStreamsPerConnection = 1000

    package init(connection: ByteStream, origin: Origin, tls: ValueBox<UpstreamTLSDetails>?, environment: UpstreamEnvironment,
         events: any UpstreamEvents) throws {
        var settings = HTTP2ClientSettings()
        settings.maxHeaderListBytes = environment.http2.maxHeaderListBytes
        self.protocolSession = try HTTP2ClientSession(settings: settings)
        self.connection = connection
        self.origin = origin
        self.tls = tls
        self.environment = environment
        self.events = events
        self.remoteAddressText = connection.peerAddress?.description
        self.localAddressText = connection.localAddress?.description
        self.timer = LoopTimer(loop: connection.loop)
        protocolSession.delegate = self
        connection.delegate = self
        timer.setOwner(self)
    }

    deinit {
        timer.invalidate()
    }

    /// Sends the connection preface (§3.4) and starts reading.
    package func start() {
        flush()
        connection.resumeReading()
        armTimer()
    }

    /// Whether another stream may be opened now.
    package var hasRoom: Bool {
        !isClosed && !goingAway && settingsReceived && protocolSession.acceptsNewStreams
            && streams.count < min(protocolSession.maxConcurrentStreams, Self.maxStreamsPerConnection)
    }

    // MARK: - Streams (called by tasks)

    /// Opens a stream for `request` (HEADERS, RFC 9113 §8.3.1); with a body, the task sends it
    /// through `sendBody` and `finishBody`. Returns the stream id and the header section's size
    /// as §6.5.2 counts it.
    package func openStream(_ request: UpstreamRequest, for delegate: HTTP2UpstreamStreamDelegate)
        -> Result<(stream: Int32, headerBytes: Int), ProxyError>
    {
        let authority = request.fields.value(for: HTTPField.Name.host) ?? request.origin.hostFieldValue
        let stream: Int32, headerBytes: Int
        do {
            (stream, headerBytes) = try protocolSession.submitRequest(
                method: request.method.rawValue, scheme: request.origin.scheme, authority: authority, path: request.target,
                fields: request.fields, acceptsTrailers: request.acceptsTrailers, hasBody: request.hasBody)
        } catch {
            return .failure(.upstreamFailed(reason: .closed("cannot open an HTTP/2 stream: \(error)")))
        }
        streams[stream] = OpenStream(delegate: delegate, method: request.method)
        streamsOpened += 1
        pingOutstanding = false
        scheduleFlush()
        return .success((stream, headerBytes))
    }

    /// Queues request body bytes; false when the stream's queue is full (wait for `streamCanTakeMoreBody`).
    package func sendBody(stream: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        scheduleFlush()
        return protocolSession.enqueueBody(stream: stream, bytes)
    }

    package func finishBody(stream: Int32, trailers: HTTPFields?) {
        protocolSession.finishBody(stream: stream, trailers: trailers.map(HTTP2MessageTranslation.headers))
        scheduleFlush()
    }

    /// Reopens the stream's window by body bytes the task has now passed on.
    package func consume(stream: Int32, count: Int) {
        protocolSession.consume(stream: stream, count: count)
        scheduleFlush()
    }

    /// The task is done with the stream before it closed (RST_STREAM CANCEL, §8.7).
    package func cancel(stream: Int32) {
        streams[stream] = nil
        protocolSession.resetStream(stream, code: .cancel)
        scheduleFlush()
        streamsChanged()
    }

    /// Graceful close: no new streams; once the streams open now are done, GOAWAY (RFC 9113
    /// §6.8) and close. The GOAWAY waits for them: to a server, a client's GOAWAY says no more
    /// than that it takes no pushes, and some servers end the connection on it.
    package func retire() {
        guard !isClosed else { return }
        goingAway = true
        releaseWaitingTasks(ready: false)
        pool?.remove(self)
        streamsChanged()
    }

    /// Closes at once (pool shutdown, failures): open streams fail.
    package func close(reason: String = "closed") {
        end(reason: reason, error: .upstreamFailed(reason: .closed("the HTTP/2 connection was closed (\(reason))")),
            report: false)
    }

    // MARK: - Output

    /// Requests the batch's events opened go out in the batch's own write, not a turn later.
    package func scheduleFlush() {
        guard !flushScheduled, !isClosed else { return }
        flushScheduled = true
        // Held strongly until the turn ends (`flush` checks whether it still has a connection):
        // a weak reference would give this object a side table, and every retain and release of
        // it, dozens per exchange, would take the slower path through that table.
        connection.loop.executeAtBatchEnd { [self] in
            flushScheduled = false
            flush()
        }
    }

    private func flush() {
        guard !isClosed else { return }
        if !outputBlocked {
            do {
                // Reading goes on while the socket is backed up: the origin only answers what was
                // asked, and other streams' responses must not wait for one upload.
                outputBlocked = try !protocolSession.writeOutput { [connection] bytes in connection.write(bytes) }
            } catch {
                end(reason: "HTTP/2 error: \(error)",
                    error: .upstreamFailed(reason: .malformedResponse("HTTP/2 connection error: \(error)")))
                return
            }
        }
        if !protocolSession.isActive {
            end(reason: "both sides are done", error: .upstreamFailed(reason: .closed("the HTTP/2 connection ended")),
                report: !streams.isEmpty)
        }
    }

    /// Ends the connection: out of the pool, the socket closed, open streams failed with `error`.
    private func end(reason: String, error: ProxyError, report: Bool = true) {
        guard !isClosed else { return }
        isClosed = true
        releaseWaitingTasks(ready: false)
        pool?.remove(self)
        timer.invalidate()
        let open = streams
        streams = [:]
        if report {
            events.emit(EventContext(connectionID: 0), UpstreamDidEndHTTP2(
                origin: origin.url(path: ""), upstreamConnectionID: connection.id, reason: reason, openStreams: open.count))
        }
        connection.closeAfterFlush(linger: 1)
        for stream in open.values { stream.delegate.streamDidFail(error) }
    }

    /// A stream ended. The last one of a connection going away closes it (GOAWAY NO_ERROR,
    /// §6.8) on the next turn of the loop: this may run inside one of nghttp2's callbacks,
    /// where its output must not be taken.
    private func streamsChanged() {
        guard streams.isEmpty, !isClosed else { return }
        idleSince = .now()
        lastPing = idleSince
        guard goingAway || environment.isShuttingDown else { return }
        // Held until then: no task may be left to keep the connection alive.
        connection.loop.execute { [self] in
            guard streams.isEmpty, !isClosed else { return }
            protocolSession.goAway()
            flush()
            close(reason: "going away")
        }
    }

    // MARK: - Timer

    private var pingInterval: Double { max(0.2, environment.poolIdleTimeout / 3) }

    private func armTimer() {
        let timeouts = environment.timeouts
        var tick = streams.isEmpty ? pingInterval / 2 : min(timeouts.upstreamFirstByte, timeouts.upstreamIdle) / 4
        if !settingsReceived { tick = min(tick, timeouts.tlsHandshake / 4) }
        timer.schedule(after: max(0.05, min(1, tick)))
    }

    /// With streams open, each task checks its own limits; idle, the connection PINGs the origin
    /// every `pingInterval` (an origin that stops answering is dropped before a request finds it
    /// dead), and closes after `pool.idle_timeout`.
    package func loopTimerFired() {
        guard !isClosed else { return }
        let now = Instant.now()
        let handshakeLimit = environment.timeouts.tlsHandshake
        if !settingsReceived && now.milliseconds(since: openedAt) / 1000 >= handshakeLimit {
            // RFC 9113 §3.4: the server's preface is its SETTINGS; tasks wait for it.
            end(reason: "the origin sent no SETTINGS within \(Int(handshakeLimit)) s (timeouts.tls_handshake)",
                error: .upstreamFailed(reason: .closed("the origin sent no HTTP/2 SETTINGS")))
            return
        }
        if !streams.isEmpty {
            for stream in Array(streams.values) { stream.delegate.streamTimerTick(at: now) }
        } else {
            let idleFor = now.milliseconds(since: idleSince) / 1000
            if idleFor >= environment.poolIdleTimeout || environment.isShuttingDown {
                protocolSession.goAway()
                flush()
                close(reason: "idle")
                return
            }
            let sincePing = now.milliseconds(since: lastPing) / 1000
            if pingOutstanding && sincePing >= pingInterval {
                end(reason: "no PING ACK within \(Int(pingInterval * 1000)) ms",
                    error: .upstreamFailed(reason: .closed("no PING ACK")))
                return
            }
            if !pingOutstanding && sincePing >= pingInterval {
                pingOutstanding = true
                lastPing = now
                protocolSession.ping()
                flush()
            }
        }
        guard !isClosed else { return }
        armTimer()
    }

    // MARK: - ConnectionDelegate

    package func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        guard !isClosed else { return }
        do {
            try protocolSession.receive(bytes)
        } catch {
            // nghttp2 queued GOAWAY PROTOCOL_ERROR: it goes out, then the connection ends.
            flush()
            end(reason: "HTTP/2 error: \(error)",
                error: .upstreamFailed(reason: .malformedResponse("HTTP/2 connection error: \(error)")))
            return
        }
        flush()
    }

    package func connectionDidReadEOF(_ connection: ByteStream) {
        end(reason: "the origin closed the connection",
            error: .upstreamFailed(reason: .closed(goingAway ? "after GOAWAY" : "the HTTP/2 connection ended")),
            report: !streams.isEmpty)
    }

    package func connectionDidDrain(_ connection: ByteStream) {
        outputBlocked = false
        flush()
    }

    package func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        end(reason: error.description, error: .upstreamFailed(reason: .closed(error.description)),
            report: !streams.isEmpty)
    }

    // MARK: - HTTP2ClientSessionDelegate

    package func http2Session(_ protocolSession: HTTP2ClientSession, didReceiveResponse headers: [HTTP2Header], stream id: Int32,
                      endStream: Bool, fieldBytes: Int) {
        guard let stream = streams[id] else { return }
        guard let head = HTTP2MessageTranslation.responseHead(headers, endStream: endStream, fieldBytes: fieldBytes,
                                                              requestMethod: stream.method) else {
            streams[id] = nil
            protocolSession.resetStream(id, code: .protocolError)
            stream.delegate.streamDidFail(.upstreamFailed(reason: .malformedResponse("HTTP/2 response without a valid :status")))
            streamsChanged()
            return
        }
        if head.status < 200 {
            stream.delegate.streamDidReceiveInformational(head)
        } else {
            stream.delegate.streamDidReceiveResponse(consume head)
        }
    }

    package func http2Session(_ protocolSession: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, stream id: Int32) {
        guard let stream = streams[id] else {
            // Nobody takes it (a cancelled stream): the window reopens at once.
            protocolSession.consume(stream: id, count: bytes.count)
            return
        }
        if stream.delegate.streamDidReceiveData(bytes) { protocolSession.consume(stream: id, count: bytes.count) }
    }

    package func http2Session(_ protocolSession: HTTP2ClientSession, didFinishResponse id: Int32, trailers: [HTTP2Header]?) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.delegate.streamDidFinish(trailers: trailers.map(HTTP2MessageTranslation.fields))
        streamsChanged()
    }

    package func http2Session(_ protocolSession: HTTP2ClientSession, didCloseStream id: Int32, code: HTTP2ErrorCode,
                      problem: HTTP2StreamProblem?) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        let error: ProxyError
        switch problem {
        case .malformed(let reason):
            error = .upstreamFailed(reason: .malformedResponse("HTTP/2 stream \(id): \(reason)"))
        case .headerListTooLarge(let limit):
            error = .upstreamFailed(reason: .malformedResponse(
                "HTTP/2 stream \(id): response header list over \(limit) bytes (http2.max_header_list_bytes)"))
        case .resetByPeer where code == .refusedStream:
            error = .upstreamFailed(reason: .streamRefused("REFUSED_STREAM on HTTP/2 stream \(id)"))
        case .resetByPeer:
            error = .upstreamFailed(reason: .streamReset(stream: id, code: code.registeredName))
        case nil where code == .protocolError:
            // nghttp2 reset the stream for a malformed response it found without a callback of
            // its own, e.g. a content-length the DATA frames did not match (§8.1.1).
            error = .upstreamFailed(reason: .malformedResponse(
                "HTTP/2 stream \(id): malformed response (PROTOCOL_ERROR, RFC 9113 §8.1.1)"))
        case nil where code == .refusedStream:
            // nghttp2 closes the streams above a GOAWAY's last stream id this way (§6.8).
            error = .upstreamFailed(reason: .streamRefused("HTTP/2 stream \(id) was above the origin's GOAWAY"))
        case nil:
            error = .upstreamFailed(reason: .closed("HTTP/2 stream \(id) closed (\(code.registeredName))"))
        }
        stream.delegate.streamDidFail(error)
        streamsChanged()
    }

    package func http2Session(_ protocolSession: HTTP2ClientSession, canSendMoreOn id: Int32) {
        streams[id]?.delegate.streamCanTakeMoreBody()
    }

    package func http2Session(_ protocolSession: HTTP2ClientSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32,
                      debugData: String) {
        goingAway = true
        releaseWaitingTasks(ready: false)
        pool?.remove(self)
        events.emit(EventContext(connectionID: 0), UpstreamDidReceiveGoAway(
            origin: origin.url(path: ""), upstreamConnectionID: connection.id, code: code.registeredName,
            lastStreamID: lastStreamID, openStreams: streams.count, debugData: debugData))
        // The streams above `lastStreamID` close next (REFUSED_STREAM); the others may finish.
        streamsChanged()
    }

    package func http2SessionDidReceiveSettings(_ protocolSession: HTTP2ClientSession) {
        settingsReceived = true
        releaseWaitingTasks(ready: true)
    }

    private func releaseWaitingTasks(ready: Bool) {
        guard releasesWaitingTasks else { return }
        releasesWaitingTasks = false
        pool?.finishOpening(origin, speaksHTTP2: ready ? true : nil)
    }

    package func http2SessionDidReceivePingAck(_ protocolSession: HTTP2ClientSession) {
        pingOutstanding = false
    }
}
