import HTTPTypes
import LookoutModel
import LookoutUpstream

/// The request body's way upstream (called by the client connection): upload pacing, the stages
/// that watch it, the copy kept for another attempt, and backpressure both ways.
extension Exchange {
    /// False while the request is complete or the upstream (or the upload pacing) cannot take more yet.
    var acceptsRequestBody: Bool {
        !requestEnded && !bodyPausedForUpstream && !finished && !(shaping?.holdsRequestBody ?? false)
    }

    func clientSentBody(_ bytes: UnsafeRawBufferPointer) {
        guard !finished else { return }
        if let uploadPacer = shaping?.upload {
            // What the rate does not allow yet waits in the pacer; `acceptsRequestBody` stops the client meanwhile.
            _ = uploadPacer.send(bytes)
            return
        }
        takeBody(bytes)
    }

    /// Request body bytes on their way upstream (after any upload pacing).
    func takeBody(_ bytes: UnsafeRawBufferPointer) {
        guard !finished else { return }
        forEachStage { $0.requestBody(bytes, exchange: self) }
        requestBodyBytes += UInt64(bytes.count)
        let limit = environment.maxRequestBodyBytes
        if limit > 0 && requestBodyBytes > limit {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        if bodyDropped { return }
        if heldRequestBody != nil, collectHeldRequestBody(bytes) { return }
        routeBody(bytes)
    }

    /// Bytes toward the upstream: the copy kept for another attempt, the running task, or the
    /// bounded buffer while the upstream is not ready.
    func routeBody(_ bytes: UnsafeRawBufferPointer) {
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
            // The upstream is still connecting, a stage holds the exchange, or stored bytes go
            // first: hold one read's worth, then stop reading.
            earlyBody.append(contentsOf: bytes)
            if earlyBody.count >= 64 * 1024 { bodyPausedForUpstream = true }
            feedTask()
        }
    }

    func clientFinishedBody(trailers: HTTPFields?) {
        // A bodiless request was already complete at its head.
        guard !finished, head.framing != .none else { return }
        if let shaping, let uploadPacer = shaping.upload, uploadPacer.isHolding {
            shaping.requestEndWaits = true
            uploadPacer.whenFlushed { [unowned self] in
                self.shaping?.requestEndWaits = false
                requestBodyDidEnd(trailers: trailers)
            }
            return
        }
        requestBodyDidEnd(trailers: trailers)
    }

    private func requestBodyDidEnd(trailers: HTTPFields?) {
        guard !finished else { return }
        forEachStage { $0.requestEnd(exchange: self) }
        requestEnded = true
        requestTrailers = trailers
        if heldRequestBody != nil { heldRequestBodyEnded() }
        feedTask()
    }

    func clientSentInvalidBody(_ error: ProxyError) {
        fail(error)
    }

    /// Sends the current task what it has not had yet: kept bytes first, then what waited, then the
    /// end of the body. Pauses the client while the upstream is backed up.
    func feedTask() {
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
    func resumeClientInput() {
        context.loop.execute { [weak self] in
            guard let self, !finished else { return }
            // The pacer sends what it held first; its timer asks for more once the rate allows.
            if let uploadPacer = shaping?.upload, !uploadPacer.sinkDidDrain() { return }
            delegate.exchangeCanTakeInput()
        }
    }
}
