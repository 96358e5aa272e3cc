import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel

/// An attempt carried by a stream of the origin's HTTP/2 connection (RFC 9113) rather than a
/// connection of its own: the same reports to the exchange, the same metrics, with the stream id.
extension UpstreamTask: HTTP2UpstreamStreamDelegate {
    /// The connection just opened negotiated `h2` (or is cleartext h2 by prior knowledge): it
    /// joins the pool, where other tasks for the origin find it, and carries this attempt first.
    package func startHTTP2(on stream: ByteStream, tls: ValueBox<UpstreamTLSDetails>?) {
        let shared: HTTP2UpstreamConnection
        do {
            shared = try HTTP2UpstreamConnection(connection: stream, origin: origin, tls: tls, environment: environment,
                                                 events: events)
        } catch {
            stream.close()
            complete(.upstreamFailed(reason: .closed("cannot start HTTP/2: \(error)")))
            return
        }
        pool.add(shared)
        // The tasks waiting for this connection go on once the origin's SETTINGS say how many
        // streams it takes: the connection tells them.
        shared.releasesWaitingTasks = handOverOpening()
        shared.start()
        useStream(on: shared)
    }

    /// Sends the request head as a HEADERS frame on a new stream of `shared`.
    package func useStream(on shared: HTTP2UpstreamConnection) {
        multiplexed = shared
        metrics.networkProtocolName = "h2"
        metrics.tlsBox = shared.tls
        metrics.remoteAddress = shared.remoteAddressText
        metrics.localAddress = shared.localAddressText
        metrics.upstreamConnectionID = shared.connection.id
        if shared.streamsOpened > 0 {
            metrics.isReusedConnection = true
            events.upstream(eventContext, didReuse: shared.connection)
        }
        metrics.requestStart = .now()
        switch shared.openStream(request, for: self) {
        case .failure(let error):
            multiplexed = nil
            complete(error)
        case .success(let (stream, headerBytes)):
            streamID = stream
            metrics.upstreamStreamID = stream
            metrics.requestHeaderBytes = UInt64(headerBytes)
            delegate.taskIsReadyForBody(self)
        }
    }

    package func sendBodyOnStream(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let multiplexed, !isDone, !requestBodySent else { return true }
        metrics.requestBodyBytes += UInt64(bytes.count)
        let accepted = multiplexed.sendBody(stream: streamID, bytes)
        delegate.task(self, didSendBodyData: bytes.count)
        return accepted
    }

    package func finishBodyOnStream(trailers: HTTPFields?) {
        guard let multiplexed, !isDone, !requestBodySent else { return }
        multiplexed.finishBody(stream: streamID, trailers: trailers)
        requestBodySent = true
        metrics.requestEnd = .now()
    }

    // MARK: - HTTP2UpstreamStreamDelegate

    package func streamDidReceiveInformational(_ head: ResponseHead) {
        guard !isDone else { return }
        noteResponseBytes()
        metrics.responseHeaderBytes += UInt64(head.headLength)
        delegate.task(self, didReceiveInformational: head)
    }

    package func streamDidReceiveResponse(_ head: consuming ResponseHead) {
        guard !isDone else { return }
        noteResponseBytes()
        metrics.responseHeaderBytes += UInt64(head.headLength)
        responseHeadReceived = true
        metrics.statusCode = head.status
        if delegate.task(self, didReceiveResponse: consume head) == .abandon {
            // Held back (a retry or a followed redirect follows): the stream is reset, and the
            // connection goes on serving the others — nothing to drain, unlike HTTP/1.1.
            metrics.responseEnd = .now()
            complete(nil)
        }
    }

    package func streamDidReceiveData(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isDone else { return true }
        lastRead = .now()
        bodyBytesReceived += UInt64(bytes.count)
        metrics.responseBodyBytes = bodyBytesReceived
        let clientKeepsUp = delegate.task(self, didReceiveData: bytes, total: bodyBytesReceived)
        if isDone || (clientKeepsUp && !readingPaused) { return true }
        // The window stays shut by these bytes until the client drains (`resumeReading`).
        unconsumedBytes += bytes.count
        if !readingPaused {
            readingPaused = true
            delegate.taskDidSuspend(self)
        }
        return false
    }

    package func streamDidFinish(trailers: HTTPFields?) {
        guard !isDone else { return }
        metrics.responseEnd = .now()
        responseComplete = true
        delegate.task(self, didFinishResponseWith: trailers)
        // A stream whose request went out whole is over; otherwise `complete` resets it.
        if requestBodySent { multiplexed = nil }
        finishSuccessfully()
    }

    package func streamDidFail(_ error: ProxyError) {
        guard !isDone else { return }
        multiplexed = nil  // the connection has already forgotten the stream
        complete(error)
    }

    package func streamCanTakeMoreBody() {
        upstreamDidDrain()
    }

    package func streamTimerTick(at now: Instant) {
        guard !isDone, multiplexed != nil else { return }
        let timeouts = environment.timeouts
        if !receivedResponseBytes {
            let waited = now.milliseconds(since: metrics.requestStart ?? now) / 1000
            if waited >= timeouts.upstreamFirstByte {
                complete(.upstreamFailed(reason: .firstByteTimedOut(after: timeouts.upstreamFirstByte)))
            }
        } else if !readingPaused, now.milliseconds(since: lastRead) / 1000 >= timeouts.upstreamIdle {
            complete(.upstreamFailed(reason: .idleTimedOut(after: timeouts.upstreamIdle)))
        }
    }
}
