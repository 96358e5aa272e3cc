import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// The upstream attempts of an exchange: each hop's request head, the task that sends it, and what
/// the task reports back (through `SessionDelegate`).
extension Exchange {
    /// The request for one hop: its head as `HopRequestHead` makes it, then the stages.
    func makeUpstreamRequest(method: HTTPRequest.Method, origin: Origin, path: String, url: String,
                             withBody: Bool, stripCredentials: Bool) -> UpstreamRequest {
        // Built in place inside the head the stages change: a separate copy would be copied
        // again by the first stage that appends a field (one allocation per request).
        var adaptation = UpstreamAdaptation(
            head: UpstreamRequestHead(method: method, target: path, authority: origin.authority, headerFields: head.headerFields),
            origin: origin)
        HopRequestHead.prepare(&adaptation, fields: head.headerFields, framing: head.framing,
                               contentLengthIsList: head.contentLengthIsList, path: path, withBody: withBody,
                               stripCredentials: stripCredentials, hostField: attempts.hostOverride,
                               upgrade: traits.upgradeProtocol, passesProxyAuthorization: !environment.asksForCredentials)
        forEachStage { $0.upstreamRequest(&adaptation, exchange: self) }
        environment.emit(requestContext, RequestDidAdaptRequest(upstreamTarget: adaptation.head.target,
                                                            headerFields: adaptation.head.headerFields,
                                                            rule: adaptation.rule, changes: adaptation.changes))
        return UpstreamRequest(origin: origin, method: method, url: url, target: adaptation.head.target,
                               fields: adaptation.head.headerFields,
                               bodyIsChunked: HopRequestHead.isChunked(framing: head.framing, withBody: withBody), hasBody: withBody,
                               asksForUpgrade: traits.upgradeProtocol != nil, acceptsTrailers: HopRequestHead.acceptsTrailers(head.headerFields))
    }

    func startAttempt() {
        summary.attempts += 1
        // Each attempt names its own span to the origin (W3C Trace Context §3.2), a retry too.
        // Read through `summary.trace?`: bound, the trace context is copied with its strings.
        if environment.stagePlan.propagatesTrace, let traceparent = summary.trace?.traceparent(attempt: summary.attempts) {
            attempts.request.set(TraceFields.parent, to: traceparent)
        }
        let task = UpstreamTask(id: environment.makeTaskID(), attempt: summary.attempts, request: attempts.request, requestID: id,
                                connectionID: records.connectionID, environment: environment.upstream, pool: context.pool,
                                events: context.delegate, delegate: self)
        self.task = task
        upload?.attemptStarts()
        forEachStage { $0.attemptStarts(exchange: self) }
        context.delegate.upstream(EventContext(connectionID: records.connectionID, requestID: id, taskID: task.id),
                                  didCreateFor: attempts.request.origin, attempt: summary.attempts)
        task.start()
    }

    // MARK: - Upstream callbacks (from the attempt, `Exchange+UpstreamTaskDelegate`)

    /// 1xx from the origin (RFC 9110 §15.2): forwarded to HTTP/1.1 and HTTP/2 clients, dropped for 1.0 ones.
    func taskDidReceiveInformational(_ response: ResponseHead) {
        guard head.version != .http1_0, response.status != 101 else { return }
        var fields = response.headerFields
        HopByHopHeaders.remove(from: &fields)
        client.writeInformational(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields)
    }

    /// A final response head: the stages decide what becomes of it. Returns false when the
    /// response is held back (the task stops relaying it, and its completion starts what comes next).
    func taskDidReceiveResponse(_ response: consuming ResponseHead, task: UpstreamTask) -> Bool {
        if let state = attempts.resume, let failure = state.awaiting { return resumedResponse(response, state, standingFor: failure) }
        let plan = attemptPlan(for: response, task: task)
        guard case .forward(let location) = plan else {
            attempts.pendingPlan = plan
            return false
        }
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
            attempts.pendingPlan = .fail(refusal)
            return false
        case .hold(let index, let deadline, let bodyLimit):
            // A 101 goes out at once: the connection becomes a tunnel as the task ends.
            guard response.status != 101 else { break }
            let held = HeldResponse(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields,
                                    framing: reply.framing, nextStage: index + 1, source: .upstream)
            holdResponse(held, by: index, deadline: deadline, bodyLimit: bodyLimit)
            return true
        }
        if environment.resumesResponses { noteResumable(status: response.status, fields: fields, framing: response.framing) }
        sendResponseHead(status: response.status, reasonPhrase: response.reasonPhrase, fields: fields,
                         framing: reply.framing)
        return true
    }

    /// Relays body bytes; false asks the task to stop reading until the client drains.
    func taskDidReceiveData(_ bytes: UnsafeRawBufferPointer) -> Bool {
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
        attempts.resume?.offset += UInt64(bytes.count)
        if reply.framing == .none { return true }
        return client.writeBody(bytes)
    }

    func taskDidFinishResponse(trailers: HTTPFields?) {
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

    /// The attempt is over (metrics and completion delivered): switch, go on, retry, or finish.
    func taskDidComplete(_ task: UpstreamTask, metrics: consuming TransactionMetrics, error: ProxyError?) {
        // Asked while the attempt is still the current one (its records name it).
        let retry = error.flatMap { failurePlan($0, task: task) }
        record(consume metrics)
        self.task = nil
        if error == nil, let switched = task.takeSwitchedStream() {
            switchProtocols(task: task, upstream: switched.stream, upstreamLeftover: switched.leftover)
            return
        }
        guard !finished else { return }
        if let plan = attempts.pendingPlan {
            attempts.pendingPlan = nil
            proceed(with: plan)
            return
        }
        if holding.response != nil {
            // The response broke off while its head was held: the client gets the error instead.
            if let error {
                holding.response = nil
                fail(error)
            }
            return
        }
        guard let error else {
            finish(error: nil, keepAlive: reply.keepAlive)
            return
        }
        if let retry, !reply.headSent {
            proceed(with: retry)
            return
        }
        if reply.headSent, attempts.resume != nil, resumeAfter(error) { return }
        fail(error)
    }

    // MARK: - Protocol switch

    /// After a 101 the exchange becomes a tunnel over the same two connections; the tunnel
    /// writes this exchange's summary when both sides are done.
    private func switchProtocols(task: UpstreamTask, upstream: ByteStream, upstreamLeftover: [UInt8]) {
        finished = true
        closeStages()
        guard let upgradeProtocol = traits.upgradeProtocol, let stream = client.switchableStream else { preconditionFailure("a switch nobody asked for") }
        let tunnel = Tunnel(head: head, summary: summary, upgrade: reply.acceptedUpgrade ?? upgradeProtocol,
                            origin: attempts.request.origin, taskID: task.id, metrics: task.metrics, client: stream,
                            delegate: delegate, environment: environment, context: context, records: records,
                            shaping: shaping)
        delegate.exchangeDidSwitchProtocols(to: tunnel)
        tunnel.adopt(upstream, upstreamLeftover: upstreamLeftover,
                     capture: environment.stagePlan.messageCapture(for: traits.clientKey))
    }
}
