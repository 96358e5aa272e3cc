import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// The exchange is the delegate of each attempt's task: a task reports straight to it, and it
/// hands the report to its attempts (`UpstreamAttempts`), lending itself for the call.
extension Exchange: UpstreamTaskDelegate {
    func taskIsReadyForBody(_ task: UpstreamTask) { attemptIsReadyForBody(task) }
    func taskDidDrainRequestBody(_ task: UpstreamTask) { attemptDrainedBody(task) }
    func task(_ task: UpstreamTask, didSendBodyData bytes: Int) { upstream.task(task, didSendBodyData: bytes) }
    func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead) {
        upstream.task(task, didReceiveInformational: head, owner: self)
    }
    func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead) -> ResponseDisposition {
        upstream.task(task, didReceiveResponse: consume head, owner: self)
    }
    func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64) -> Bool {
        upstream.task(task, didReceiveData: bytes, total: total, owner: self)
    }
    func task(_ task: UpstreamTask, didFinishResponseWith trailers: HTTPFields?) { attemptResponseEnded(trailers: trailers) }
    func taskDidSuspend(_ task: UpstreamTask) { upstream.taskDidSuspend(task) }
    func taskDidResume(_ task: UpstreamTask) { upstream.taskDidResume(task) }
    func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: consuming TransactionMetrics,
              notifyExchange: Bool) {
        upstream.task(task, didCompleteWith: error, metrics: consume metrics, notifyExchange: notifyExchange, owner: self)
    }
}

/// The exchange's side of its attempts (`UpstreamAttempts`): the request body each one takes,
/// and the response each one lets through, on its way to the client.
extension Exchange: AttemptsOwner {
    var stageList: [any ExchangeStage] { stages }

    var responseState: AttemptsOwnerResponseState {
        AttemptsOwnerResponseState(headSent: reply.headSent, held: holding.response != nil, finished: finished)
    }

    func attemptStarts() {
        upload?.attemptStarts()
    }

    /// The attempt's head is on its way: it gets the body (a bodiless request is complete at once).
    func attemptIsReadyForBody(_ task: UpstreamTask) {
        guard let upload else {
            task.finishBody(trailers: nil)
            return
        }
        if upload.attemptIsReady(task) { resumeClientInput() }
    }

    func attemptDrainedBody(_ task: UpstreamTask) {
        if upload?.feed(task) == true { resumeClientInput() }
    }

    var requestBodyIsReplayable: Bool { upload?.isReplayable ?? false }

    /// 1xx from the origin (RFC 9110 §15.2): forwarded to HTTP/1.1 and HTTP/2 clients, dropped for 1.0 ones.
    func attemptInformational(_ response: ResponseHead) {
        guard head.version != .http1_0, response.status != 101 else { return }
        var fields = response.headerFields
        HopByHopHeaders.remove(from: &fields)
        client.writeInformational(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields)
    }

    /// A final response head the attempt's stages let through: its framing, then the response
    /// stages, then the client (or a stage holds it).
    func attemptResponse(_ response: consuming ResponseHead, location: String?) -> AttemptResponseOutcome {
        // What is read from the origin's own fields, before they are moved out of the head: with
        // the head the only other owner, adding Via and the rest below would otherwise copy all
        // of them first (copy-on-write), once per response.
        let offeredUpgrade = response.status == 101 ? response.headerFields[.upgrade] : nil
        let transferCoding: String? = switch response.framing {
        case .chunked where head.version != .http1_0: TransferCoding.canonicalField(response.headerFields)
        case .untilClose where head.version == .http1_1: TransferCoding.relayedField(response.headerFields)
        default: nil
        }
        var fields = response.headerFields
        response.headerFields = HTTPFields()
        HopByHopHeaders.remove(from: &fields)
        summary.status = response.status
        if response.status == 101 {
            // The origin accepted the switch (the task only passes a 101 on when one was asked
            // for): the client gets the 101 with the switch named, then the bytes both ways.
            fields[.connection] = "upgrade"
            if let accepted = offeredUpgrade {
                fields[.upgrade] = accepted
                reply.acceptedUpgrade = accepted
            }
            reply.framing = .none
            reply.keepAlive = false
        } else {
            prepareFraming(for: response, transferCoding: transferCoding, fields: &fields)
        }
        if let location { fields[.location] = location }
        switch runResponseStages(status: response.status, reasonPhrase: response.reasonPhrase, fields: &fields) {
        case .proceed:
            break
        case .fail(let refusal):
            return .refused(refusal)
        case .hold(let index, let deadline, let bodyLimit):
            // A 101 goes out at once: the connection becomes a tunnel as the task ends.
            guard response.status != 101 else { break }
            let held = HeldResponse(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields,
                                    framing: reply.framing, nextStage: index + 1, source: .upstream)
            holdResponse(held, by: index, deadline: deadline, bodyLimit: bodyLimit)
            return .relayed
        }
        upstream.noteResumable(status: response.status, fields: fields, framing: response.framing, owner: self)
        sendResponseHead(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields,
                         framing: reply.framing)
        return .relayed
    }

    /// Relays body bytes; false asks the task to stop reading until the client drains.
    func attemptBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if let held = holding.response {
            // Kept until the head is let go; the origin is not read meanwhile, unless the
            // holding stage asked for the body (up to its limit).
            held.body.append(contentsOf: bytes)
            guard let limit = held.bodyLimit, !held.bodyReported else { return false }
            if held.body.count <= limit { return true }
            reportHeldResponseBody(held, complete: false)
            return false
        }
        responseBodyPassed(bytes)
        if reply.framing == .none { return true }
        return client.writeBody(bytes)
    }

    func attemptResponseEnded(trailers: HTTPFields?) {
        if let held = holding.response {
            held.ended = true
            held.trailers = trailers
            if held.bodyLimit != nil, !held.bodyReported { reportHeldResponseBody(held, complete: true) }
            return
        }
        endResponse(trailers: trailers)
    }

    /// The end of the origin's body (and its trailers) to the client.
    func endResponse(trailers: HTTPFields?) {
        var fields = trailers ?? HTTPFields()
        HopByHopHeaders.remove(from: &fields)
        client.writeEnd(trailers: fields.isEmpty ? nil : fields)
        if reply.framing == .untilClose { reply.keepAlive = false }
        responseBodyEnded(trailers: trailers)
    }

    func attemptsFinished() {
        finish(error: nil, keepAlive: reply.keepAlive)
    }

    func attemptsFailed(_ error: ProxyError) {
        fail(error)
    }

    func attemptsAnswer(_ answer: StageAnswer) {
        self.answer(answer, phase: answer.phase ?? "answering")
    }

    /// The response broke off while its head was held: the client gets the error instead.
    func attemptEndedWhileHeld(error: ProxyError?) {
        guard let error else { return }
        holding.response = nil
        fail(error)
    }

    // MARK: - Protocol switch

    /// After a 101 the exchange becomes a tunnel over the same two connections; the tunnel
    /// writes this exchange's summary when both sides are done.
    func attemptSwitchedProtocols(_ task: UpstreamTask, upstream: ByteStream, leftover upstreamLeftover: [UInt8]) {
        finished = true
        closeStages()
        guard let upgradeProtocol = traits.upgradeProtocol, let stream = client.switchableStream else { preconditionFailure("a switch nobody asked for") }
        let tunnel = Tunnel(head: head, summary: summary, upgrade: reply.acceptedUpgrade ?? upgradeProtocol,
                            origin: self.upstream.ledger.request.origin, taskID: task.id, metrics: task.metrics, client: stream,
                            delegate: delegate, environment: environment, context: context, records: records,
                            shaping: shaping)
        delegate.exchangeDidSwitchProtocols(to: tunnel)
        tunnel.adopt(upstream, upstreamLeftover: upstreamLeftover,
                     capture: environment.stagePlan.messageCapture(for: traits.clientKey))
    }
}
