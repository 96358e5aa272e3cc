import HTTPTypes
import LookoutModel
import LookoutUpstream

/// The client connection's body calls, and the relay's answers: upload pacing first, then the
/// stages that watch the body, the limit, a stage's hold, and the relay toward the attempt.
extension Exchange {
    /// The request is complete at its head, or its body has ended.
    var requestEnded: Bool { upload?.ended ?? true }

    /// False while the request is complete or the upstream (or the upload pacing) cannot take more yet.
    var acceptsRequestBody: Bool {
        guard let upload else { return false }
        return !upload.ended && !upload.pausedForUpstream && !finished && !(shaping?.holdsRequestBody ?? false)
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
        guard !finished, let upload else { return }
        forEachStage { $0.requestBody(bytes, exchange: self) }
        let limit = environment.maxRequestBodyBytes
        if upload.count(bytes.count) > limit && limit > 0 {
            fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        if upload.dropped { return }
        if holding.requestBody != nil, collectHeldRequestBody(bytes) { return }
        routeBody(bytes)
    }

    /// Bytes toward the upstream, through the relay.
    func routeBody(_ bytes: UnsafeRawBufferPointer) {
        if upload?.route(bytes, to: upstream.task) == true { resumeClientInput() }
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
        guard !finished, let upload else { return }
        forEachStage { $0.requestEnd(exchange: self) }
        upload.end(trailers: trailers)
        if holding.requestBody != nil { heldRequestBodyEnded() }
        if upload.feed(upstream.task) { resumeClientInput() }
    }

    func clientSentInvalidBody(_ error: ProxyError) {
        fail(error)
    }

    /// Nothing goes upstream any more (an answer, a redirect turned into a GET): a held body is
    /// let go, and the rest of the client's is read and dropped.
    func dropRequestBody() {
        holding.requestBody = nil
        if upload?.drop() == true { resumeClientInput() }
    }

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
