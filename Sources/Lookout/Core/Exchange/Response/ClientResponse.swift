import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// The response's way to the client: its head through the response stages, its framing and
/// keep-alive (RFC 9112 §6, §9.3), the body relayed from the attempt or produced by an answer
/// (a stage's, or a deferred one that a collapsed cache miss fills), and a response head a stage
/// holds. It owns the writer to the client and the reply's state; the exchange is passed to each
/// call (`ResponseOwner`), borrowed for it, never stored.
final class ClientResponse<Owner: ResponseOwner>: @unchecked Sendable {  // confined to the exchange's loop queue
    /// Where the response goes (an HTTP/1.x connection or an HTTP/2 stream); only ever written to
    /// here. A shaped response goes through the shaping rule's writer, which wraps the connection's.
    var client: ClientResponseWriter
    /// Whether the head went out, the framing, keep-alive, who produces an answer's body.
    var reply = ClientReply()

    init(client: ClientResponseWriter) {
        self.client = client
    }

    /// The final response head through the stages from `first` on (Via, header rules…): whether
    /// it goes on, is refused, or is held.
    func runResponseStages(from first: Int = 0, status: Int, reasonPhrase: String,
                           fields: inout HTTPFields, owner: Owner) -> ResponseStagesOutcome {
        let list = owner.stageList
        guard first < list.count else { return .proceed }
        var response = StageResponseHead(status: status, reasonPhrase: reasonPhrase, fields: fields,
                                         origin: owner.upstream.ledger.request.origin)
        // One owner of the fields while the stages change them (copy-on-write would copy them).
        fields = HTTPFields()
        defer { fields = response.fields }
        return list.withUnsafeBufferPointer { stages in
            for index in first..<stages.count {
                switch stages[index].responseHead(&response, exchange: owner) {
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
    func sendResponseHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming, owner: Owner) {
        client.writeHead(status: status, reasonPhrase: reasonPhrase, fields: fields, framing: framing)
        reply.headSent = true
        if let rule = owner.shaping?.rule, rule.stall > 0 {
            ExchangeShaping.record(.stall(milliseconds: rule.stall * 1000), rule: rule, exchange: owner)
        }
        owner.summary.responseHeaders = fields
        owner.summary.requestHeaders = owner.requestHead.headerFields
    }

    /// An answer in place of the upstream's (a stage's, or a stored response): its head, then its
    /// body while the client keeps up, then the end of the exchange.
    func answer(_ answer: StageAnswer, phase: String, owner: Owner) {
        owner.summary.status = answer.status
        var fields = answer.fields
        reply.framing = answer.framing
        decideKeepAlive(possible: owner.requestEnded, fields: &fields, owner: owner)
        switch runResponseStages(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: &fields, owner: owner) {
        case .proceed:
            sendAnswer(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: fields, body: answer.body,
                       phase: phase, owner: owner)
        case .fail(let error):
            owner.fail(error)
        case .hold(let index, let deadline, let bodyLimit):
            let held = HeldResponse(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: fields,
                                    framing: reply.framing, nextStage: index + 1,
                                    source: .answer(answer.body, phase: phase))
            holdResponse(held, by: index, deadline: deadline, bodyLimit: bodyLimit, owner: owner)
        }
    }

    /// An answer's head, then its body while the client keeps up, then the end of the exchange.
    private func sendAnswer(status: Int, reasonPhrase: String, fields: HTTPFields, body: (any ResponseBodySource)?,
                            phase: String, owner: Owner) {
        sendResponseHead(status: status, reasonPhrase: reasonPhrase, fields: fields, framing: reply.framing, owner: owner)
        guard let body else {
            client.writeEnd(trailers: nil)
            owner.responseBodyEnded(trailers: nil)
            owner.finish(error: nil, keepAlive: reply.keepAlive, truncate: false)
            return
        }
        reply.producer = .body(body, phase: phase)
        sendAnswerBody(owner: owner)
    }

    /// Sends the answer's body until the client is backed up (`clientDidDrain` resumes).
    func sendAnswerBody(owner: Owner) {
        guard case .body(let body, _)? = reply.producer, !owner.finished else { return }
        switch body.send(to: client, observe: { owner.responseBodyPassed($0) }) {
        case .waiting:
            return
        case .done:
            reply.producer = nil
            client.writeEnd(trailers: nil)
            owner.responseBodyEnded(trailers: nil)
            owner.finish(error: nil, keepAlive: reply.keepAlive, truncate: false)
        case .failed:
            reply.producer = nil
            // The head announced the length: a short body must reach the client as a broken one.
            owner.finish(error: body.failure, keepAlive: false, truncate: true)
        }
    }

    /// How the response body goes to the client (`ClientReply.framing`), and whether the client
    /// connection stays open: until the whole request was read (the origin answered early, e.g.
    /// 413) the rest of its body cannot be delimited any more, so the connection ends with the
    /// exchange.
    func prepareFraming(for response: ResponseHead, transferCoding: String?, fields: inout HTTPFields, owner: Owner) {
        reply.framing = ClientReply.framing(for: response, clientVersion: owner.requestHead.version, transferCoding: transferCoding,
                                            fields: &fields)
        decideKeepAlive(possible: reply.framing != .untilClose && owner.requestEnded, fields: &fields, owner: owner)
    }

    /// Whether the client connection stays open after this response — it asked to, the response
    /// allows it (`possible`), nobody is closing it — and the response's `Connection` field saying so.
    func decideKeepAlive(possible: Bool, fields: inout HTTPFields, owner: Owner) {
        reply.keepAlive = possible && owner.requestHead.keepAlive && !owner.delegate.isClosingAfterExchange && !owner.environment.isShuttingDown
        if reply.keepAlive {
            if owner.requestHead.version == .http1_0 { fields[.connection] = "keep-alive" }
        } else {
            fields[.connection] = "close"
        }
    }

    func clientDidDrain(owner: Owner) {
        if let shaped = owner.shaping?.response, !shaped.clientDidDrain() { return }
        resumeResponse(owner: owner)
    }

    /// The client (and the response's shaping) can take more of the response: whoever produces it goes on.
    func resumeResponse(owner: Owner) {
        switch reply.producer {
        case .body?: sendAnswerBody(owner: owner)
        case .deferred?: advanceDeferred(afterDrain: true, owner: owner)
        case nil: owner.upstream.task?.resumeReading()
        }
    }

    /// The stage that held the response head let go (`StageContext.resume`).
    func resumeResponse(_ verdict: StageVerdict, from stage: any ExchangeStage, owner: Owner) {
        guard let held = owner.holding.response else { return }
        switch verdict {
        case .proceed:
            releaseHeldResponse(held, owner: owner)
        case .fail(let error):
            owner.holding.response = nil
            owner.fail(error)
        case .answer(let answer):
            // In place of the held response: what the origin still sends is not wanted, and the
            // answer goes on through the stages after the holding one, as the response would have.
            owner.upstream.stop(owner: owner)
            owner.dropRequestBody()
            owner.summary.status = answer.status
            var fields = answer.fields
            reply.framing = answer.framing
            decideKeepAlive(possible: owner.requestEnded, fields: &fields, owner: owner)
            let replacement = HeldResponse(status: answer.status, reasonPhrase: answer.reasonPhrase, fields: fields,
                                           framing: answer.framing, nextStage: held.nextStage,
                                           source: .answer(answer.body, phase: stage.heldPhase))
            owner.holding.response = replacement
            releaseHeldResponse(replacement, owner: owner)
        case .answerLater(let answer):
            owner.holding.response = nil
            owner.upstream.stop(owner: owner)
            owner.dropRequestBody()
            answerLater(answer, owner: owner)
        case .hold(let deadline), .holdWithBody(_, let deadline):
            // Held again: the body (if it was asked for) is already what it will be.
            owner.hold(by: stage, deadline: deadline)
        }
    }

    /// The stages after the holding one, then the head, what arrived behind it, and the rest.
    private func releaseHeldResponse(_ held: HeldResponse, owner: Owner) {
        var fields = held.fields
        switch runResponseStages(from: held.nextStage, status: held.status, reasonPhrase: held.reasonPhrase,
                                 fields: &fields, owner: owner) {
        case .fail(let error):
            owner.holding.response = nil
            owner.fail(error)
            return
        case .hold(let index, let deadline, let bodyLimit):
            held.fields = fields
            held.nextStage = index + 1
            holdResponse(held, by: index, deadline: deadline, bodyLimit: bodyLimit, owner: owner)
            return
        case .proceed:
            owner.holding.response = nil
        }
        guard case .upstream = held.source else {
            if case .answer(let body, let phase) = held.source {
                sendAnswer(status: held.status, reasonPhrase: held.reasonPhrase, fields: fields, body: body, phase: phase, owner: owner)
            }
            return
        }
        sendResponseHead(status: held.status, reasonPhrase: held.reasonPhrase, fields: fields, framing: held.framing, owner: owner)
        var accepted = true
        if !held.body.isEmpty {
            held.body.withUnsafeBytes { bytes in
                owner.responseBodyPassed(bytes)
                if reply.framing != .none { accepted = client.writeBody(bytes) }
            }
        }
        if held.ended {
            endResponse(trailers: held.trailers, owner: owner)
            // The task completed while the head was held.
            if owner.upstream.task == nil { owner.finish(error: nil, keepAlive: reply.keepAlive, truncate: false) }
            return
        }
        // The client takes more: the origin is read again (else `clientDidDrain` resumes it).
        if accepted { owner.upstream.task?.resumeReading() }
    }

    /// 1xx from the origin (RFC 9110 §15.2): forwarded to HTTP/1.1 and HTTP/2 clients, dropped for 1.0 ones.
    func attemptInformational(_ response: ResponseHead, owner: Owner) {
        guard owner.requestHead.version != .http1_0, response.status != 101 else { return }
        var fields = response.headerFields
        HopByHopHeaders.remove(from: &fields)
        client.writeInformational(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields)
    }

    /// A final response head the attempt's stages let through: its framing, then the response
    /// stages, then the client (or a stage holds it).
    func attemptResponse(_ response: consuming ResponseHead, location: String?, owner: Owner) -> AttemptResponseOutcome {
        // What is read from the origin's own fields, before they are moved out of the head: with
        // the head the only other owner, adding Via and the rest below would otherwise copy all
        // of them first (copy-on-write), once per response.
        let offeredUpgrade = response.status == 101 ? response.headerFields[.upgrade] : nil
        let transferCoding: String? = switch response.framing {
        case .chunked where owner.requestHead.version != .http1_0: TransferCoding.canonicalField(response.headerFields)
        case .untilClose where owner.requestHead.version == .http1_1: TransferCoding.relayedField(response.headerFields)
        default: nil
        }
        var fields = response.headerFields
        response.headerFields = HTTPFields()
        HopByHopHeaders.remove(from: &fields)
        owner.summary.status = response.status
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
            prepareFraming(for: response, transferCoding: transferCoding, fields: &fields, owner: owner)
        }
        if let location { fields[.location] = location }
        switch runResponseStages(status: response.status, reasonPhrase: response.reasonPhrase, fields: &fields, owner: owner) {
        case .proceed:
            break
        case .fail(let refusal):
            return .refused(refusal)
        case .hold(let index, let deadline, let bodyLimit):
            // A 101 goes out at once: the connection becomes a tunnel as the task ends.
            guard response.status != 101 else { break }
            let held = HeldResponse(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields,
                                    framing: reply.framing, nextStage: index + 1, source: .upstream)
            holdResponse(held, by: index, deadline: deadline, bodyLimit: bodyLimit, owner: owner)
            return .relayed
        }
        owner.upstream.noteResumable(status: response.status, fields: fields, framing: response.framing, owner: owner)
        sendResponseHead(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields,
                         framing: reply.framing, owner: owner)
        return .relayed
    }

    /// Relays body bytes; false asks the task to stop reading until the client drains.
    func attemptBody(_ bytes: UnsafeRawBufferPointer, owner: Owner) -> Bool {
        if let held = owner.holding.response {
            // Kept until the head is let go; the origin is not read meanwhile, unless the
            // holding stage asked for the body (up to its limit).
            held.body.append(contentsOf: bytes)
            guard let limit = held.bodyLimit, !held.bodyReported else { return false }
            if held.body.count <= limit { return true }
            reportHeldResponseBody(held, complete: false, owner: owner)
            return false
        }
        owner.responseBodyPassed(bytes)
        if reply.framing == .none { return true }
        return client.writeBody(bytes)
    }

    func attemptResponseEnded(trailers: HTTPFields?, owner: Owner) {
        if let held = owner.holding.response {
            held.ended = true
            held.trailers = trailers
            if held.bodyLimit != nil, !held.bodyReported { reportHeldResponseBody(held, complete: true, owner: owner) }
            return
        }
        endResponse(trailers: trailers, owner: owner)
    }

    /// The end of the origin's body (and its trailers) to the client.
    func endResponse(trailers: HTTPFields?, owner: Owner) {
        var fields = trailers ?? HTTPFields()
        HopByHopHeaders.remove(from: &fields)
        client.writeEnd(trailers: fields.isEmpty ? nil : fields)
        if reply.framing == .untilClose { reply.keepAlive = false }
        owner.responseBodyEnded(trailers: trailers)
    }

    func answerLater(_ answer: any DeferredAnswer, owner: Owner) {
        reply.producer = .deferred(answer)
        // Told on this exchange's loop whenever there may be more to send.
        answer.start(on: owner.context.loop) { [weak self, weak owner] in
            guard let self, let owner else { return }
            advanceDeferred(afterDrain: false, owner: owner)
        }
        advanceDeferred(afterDrain: false, owner: owner)
    }

    /// Sends what the deferred answer has now, or goes upstream when it withdraws.
    func advanceDeferred(afterDrain: Bool, owner: Owner) {
        guard case .deferred(let answer)? = reply.producer, !owner.finished else { return }
        var refusal: ProxyError?
        var fetchesItself = false
        let progress = answer.advance(client: client, afterDrain: afterDrain, observe: { owner.responseBodyPassed($0) }) {
            status, reason, fields, framing in
            owner.summary.status = status
            decideKeepAlive(possible: owner.requestEnded && framing != .untilClose, fields: &fields, owner: owner)
            switch runResponseStages(status: status, reasonPhrase: reason, fields: &fields, owner: owner) {
            case .proceed:
                sendResponseHead(status: status, reasonPhrase: reason, fields: fields, framing: framing, owner: owner)
                return true
            case .fail(let error):
                refusal = error
            case .hold:
                // A deferred head cannot wait (a collapsed miss's fill goes on for the others):
                // this exchange fetches for itself, and the stage sees the response it gets.
                fetchesItself = true
            }
            return false
        }
        switch progress {
        case .waiting:
            return
        case .done:
            reply.producer = nil
            if let refusal {
                owner.fail(refusal)
            } else if fetchesItself {
                fetchItself(instead: answer, owner: owner)
            } else {
                owner.responseBodyEnded(trailers: nil)
                owner.finish(error: nil, keepAlive: reply.keepAlive, truncate: false)
            }
        case .failed:
            reply.producer = nil
            owner.finish(error: answer.failure, keepAlive: false, truncate: reply.headSent)
        case .goUpstream:
            reply.producer = nil
            fetchItself(instead: answer, owner: owner)
        }
    }

    /// Nothing usable came from the deferred answer: the request goes upstream after all, bodiless
    /// (only a bodiless GET is ever collapsed).
    private func fetchItself(instead answer: any DeferredAnswer, owner: Owner) {
        answer.withdraw(exchange: owner)
        owner.upstream.startFirst(withBody: false, owner: owner)
    }

    /// A response stage holds `held` (and wants its body, up to `bodyLimit` bytes, when set).
    func holdResponse(_ held: HeldResponse, by index: Int, deadline: Double?, bodyLimit: Int?, owner: Owner) {
        owner.holding.response = held
        held.bodyLimit = bodyLimit
        held.bodyReported = false
        let stage = owner.stageList[index]
        owner.hold(by: stage, deadline: deadline)
        guard let limit = bodyLimit else { return }
        var knownNow: Bool? = nil
        if case .answer(let body, _) = held.source {
            // An answer's body is produced as the client takes it: only its head can be held.
            knownNow = body == nil
        } else if held.ended {
            knownNow = true
        } else if let length = held.fields[.contentLength].flatMap({ Int($0) }), length > limit {
            knownNow = false
        }
        guard let complete = knownNow else { return }
        held.bodyReported = true
        owner.context.loop.execute { [weak owner] in
            guard let owner, !owner.finished, owner.holding.stage === stage, owner.holding.response === held else { return }
            stage.responseBodyHeld(complete ? held.body : [], complete: complete, exchange: owner)
        }
    }

    func reportHeldResponseBody(_ held: HeldResponse, complete: Bool, owner: Owner) {
        held.bodyReported = true
        let body = complete ? held.body : Array(held.body.prefix(held.bodyLimit ?? 0))
        owner.holding.stage?.responseBodyHeld(body, complete: complete, exchange: owner)
    }

    func editResponse(_ edits: ExchangeEdits, owner: Owner) -> String? {
        guard let held = owner.holding.response, owner.holding.stage != nil, !owner.finished else { return "the response is not held" }
        let whole = switch held.source {
        case .upstream: held.ended
        case .answer(let body, _): body == nil
        }
        let checked: CheckedResponseEdits
        switch CheckedResponseEdits.check(edits, fields: held.fields, bodyHeldWhole: whole) {
        case .failure(let refusal): return refusal.message
        case .success(let edits): checked = edits
        }
        if let status = checked.status {
            held.status = status
            held.reasonPhrase = ReasonPhrase.standard(for: status)
            owner.summary.status = status
        }
        if let body = checked.body {
            held.body = body
            held.trailers = nil
            held.ended = true
            held.framing = body.isEmpty ? .none : .contentLength
            // Sent from memory now, whoever produced the body (an answer's source is dropped).
            held.source = .upstream
            reply.framing = held.framing
        }
        held.fields = checked.fields
        return nil
    }
}
