import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// The response's way to the client: its head through the stages, its framing, keep-alive, and
/// the bodies of answers.
extension Exchange {
    /// The final response head through the stages from `first` on (Via, header rules…): whether
    /// it goes on, is refused, or is held.
    func runResponseStages(from first: Int = 0, status: Int, reasonPhrase: String,
                           fields: inout HTTPFields) -> ResponseStagesOutcome {
        guard first < stages.count else { return .proceed }
        var response = StageResponseHead(status: status, reasonPhrase: reasonPhrase, fields: fields,
                                         origin: upstream.ledger.request.origin)
        // One owner of the fields while the stages change them (copy-on-write would copy them).
        fields = HTTPFields()
        defer { fields = response.fields }
        let list = stages
        return list.withUnsafeBufferPointer { stages in
            for index in first..<stages.count {
                switch stages[index].responseHead(&response, exchange: self) {
                case .proceed: continue
                case .fail(let error): return .fail(error)
                case .hold(let deadline): return .hold(index: index, deadline: deadline, bodyLimit: nil)
                case .holdWithBody(let limit, let deadline): return .hold(index: index, deadline: deadline, bodyLimit: limit)
                }
            }
            return .proceed
        }
    }

    /// The head to the client, after the stages had it.
    func sendResponseHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming) {
        client.writeHead(status: status, reasonPhrase: reasonPhrase, fields: fields, framing: framing)
        reply.headSent = true
        if let rule = shaping?.rule, rule.stall > 0 {
            ExchangeShaping.record(.stall(milliseconds: rule.stall * 1000), rule: rule, exchange: self)
        }
        summary.responseHeaders = fields
        summary.requestHeaders = head.headerFields
    }

    /// An answer in place of the upstream's (a stage's, or a stored response): its head, then its
    /// body while the client keeps up, then the end of the exchange.
    func answer(_ answer: StageAnswer, phase: String) {
        summary.status = answer.status
        var fields = answer.fields
        reply.framing = answer.framing
        decideKeepAlive(possible: requestEnded, fields: &fields)
        switch runResponseStages(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: &fields) {
        case .proceed:
            sendAnswer(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: fields, body: answer.body,
                       phase: phase)
        case .fail(let error):
            fail(error)
        case .hold(let index, let deadline, let bodyLimit):
            let held = HeldResponse(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: fields,
                                    framing: reply.framing, nextStage: index + 1,
                                    source: .answer(answer.body, phase: phase))
            holdResponse(held, by: index, deadline: deadline, bodyLimit: bodyLimit)
        }
    }

    /// An answer's head, then its body while the client keeps up, then the end of the exchange.
    private func sendAnswer(status: Int, reasonPhrase: String, fields: HTTPFields, body: (any ResponseBodySource)?,
                            phase: String) {
        sendResponseHead(status: status, reasonPhrase: reasonPhrase, fields: fields, framing: reply.framing)
        guard let body else {
            client.writeEnd(trailers: nil)
            responseBodyEnded()
            finish(error: nil, keepAlive: reply.keepAlive)
            return
        }
        reply.producer = .body(body, phase: phase)
        sendAnswerBody()
    }

    /// Sends the answer's body until the client is backed up (`clientDidDrain` resumes).
    func sendAnswerBody() {
        guard case .body(let body, _)? = reply.producer, !finished else { return }
        switch body.send(to: client, observe: { [self] in responseBodyPassed($0) }) {
        case .waiting:
            return
        case .done:
            reply.producer = nil
            client.writeEnd(trailers: nil)
            responseBodyEnded()
            finish(error: nil, keepAlive: reply.keepAlive)
        case .failed:
            reply.producer = nil
            // The head announced the length: a short body must reach the client as a broken one.
            finish(error: body.failure, keepAlive: false, truncate: true)
        }
    }

    /// How the response body goes to the client (`ClientReply.framing`), and whether the client
    /// connection stays open: until the whole request was read (the origin answered early, e.g.
    /// 413) the rest of its body cannot be delimited any more, so the connection ends with the
    /// exchange.
    func prepareFraming(for response: ResponseHead, transferCoding: String?, fields: inout HTTPFields) {
        reply.framing = ClientReply.framing(for: response, clientVersion: head.version, transferCoding: transferCoding,
                                            fields: &fields)
        decideKeepAlive(possible: reply.framing != .untilClose && requestEnded, fields: &fields)
    }

    /// Whether the client connection stays open after this response — it asked to, the response
    /// allows it (`possible`), nobody is closing it — and the response's `Connection` field saying so.
    func decideKeepAlive(possible: Bool, fields: inout HTTPFields) {
        reply.keepAlive = possible && head.keepAlive && !delegate.isClosingAfterExchange && !environment.isShuttingDown
        if reply.keepAlive {
            if head.version == .http1_0 { fields[.connection] = "keep-alive" }
        } else {
            fields[.connection] = "close"
        }
    }

    func clientDidDrain() {
        if let shaped = shaping?.response, !shaped.clientDidDrain() { return }
        resumeResponse()
    }

    /// The client (and the response shaping) can take more of the response: whoever produces it goes on.
    func resumeResponse() {
        switch reply.producer {
        case .body?: sendAnswerBody()
        case .deferred?: advanceDeferred(afterDrain: true)
        case nil: upstream.task?.resumeReading()
        }
    }

    // MARK: - A held response head

    /// The stage that held the response head let go (`StageContext.resume`).
    func resumeResponse(_ verdict: StageVerdict, from stage: any ExchangeStage) {
        guard let held = holding.response else { return }
        switch verdict {
        case .proceed:
            releaseHeldResponse(held)
        case .fail(let error):
            holding.response = nil
            fail(error)
        case .answer(let answer):
            // In place of the held response: what the origin still sends is not wanted, and the
            // answer goes on through the stages after the holding one, as the response would have.
            upstream.stop(owner: self)
            dropRequestBody()
            summary.status = answer.status
            var fields = answer.fields
            reply.framing = answer.framing
            decideKeepAlive(possible: requestEnded, fields: &fields)
            let replacement = HeldResponse(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: fields,
                                           framing: answer.framing, nextStage: held.nextStage,
                                           source: .answer(answer.body, phase: stage.heldPhase))
            holding.response = replacement
            releaseHeldResponse(replacement)
        case .answerLater(let answer):
            holding.response = nil
            upstream.stop(owner: self)
            dropRequestBody()
            answerLater(answer)
        case .hold(let deadline), .holdWithBody(_, let deadline):
            // Held again: the body (if it was asked for) is already what it will be.
            hold(by: stage, deadline: deadline)
        }
    }

    /// The stages after the holding one, then the head, what arrived behind it, and the rest.
    private func releaseHeldResponse(_ held: HeldResponse) {
        var fields = held.fields
        switch runResponseStages(from: held.nextStage, status: held.status, reasonPhrase: held.reasonPhrase,
                                 fields: &fields) {
        case .fail(let error):
            holding.response = nil
            fail(error)
            return
        case .hold(let index, let deadline, let bodyLimit):
            held.fields = fields
            held.nextStage = index + 1
            holdResponse(held, by: index, deadline: deadline, bodyLimit: bodyLimit)
            return
        case .proceed:
            holding.response = nil
        }
        guard case .upstream = held.source else {
            if case .answer(let body, let phase) = held.source {
                sendAnswer(status: held.status, reasonPhrase: held.reasonPhrase, fields: fields, body: body, phase: phase)
            }
            return
        }
        sendResponseHead(status: held.status, reasonPhrase: held.reasonPhrase, fields: fields, framing: held.framing)
        var accepted = true
        if !held.body.isEmpty {
            held.body.withUnsafeBytes { bytes in
                responseBodyPassed(bytes)
                if reply.framing != .none { accepted = client.writeBody(bytes) }
            }
        }
        if held.ended {
            endResponse(trailers: held.trailers)
            // The task completed while the head was held.
            if upstream.task == nil { finish(error: nil, keepAlive: reply.keepAlive) }
            return
        }
        // The client takes more: the origin is read again (else `clientDidDrain` resumes it).
        if accepted { upstream.task?.resumeReading() }
    }
}
