import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutUpstream

/// What the exchange's tasks report, handed here by the exchange (their delegate, with no look-up
/// on the way). Each report tells the monitors first (`environment.emit`, built only when a
/// monitor wants the kind), then decides what becomes of the attempt, and passes what the client
/// gets back to the exchange (`AttemptsOwner`).
extension UpstreamAttempts {
    private func taskContext(_ task: UpstreamTask) -> EventContext {
        EventContext(connectionID: task.connectionID, requestID: requestID, taskID: task.id)
    }

    func task(_ task: UpstreamTask, didSendBodyData bytes: Int) {
        environment.emit(taskContext(task), TaskDidSendBodyData(bytesSent: bytes, totalBytesSent: task.metrics.requestBodyBytes))
    }

    /// 1xx from the origin (RFC 9110 §15.2).
    func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead, owner: Owner) {
        environment.emit(taskContext(task), TaskDidReceiveResponse(status: head.status, reasonPhrase: head.reasonPhrase,
                                                                   headerFields: head.headerFields))
        owner.attemptInformational(head)
    }

    /// A final response head: the stages decide what becomes of it. `head` is the exchange's to
    /// keep: handed on, not copied, so it can add its own fields without copying the origin's.
    /// Held back (`.abandon`): the task stops relaying it, and its completion starts what comes next.
    func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead, owner: Owner) -> ResponseDisposition {
        environment.emit(taskContext(task), TaskDidReceiveResponse(status: head.status, reasonPhrase: head.reasonPhrase,
                                                                   headerFields: head.headerFields))
        if let state = ledger.resume, let failure = state.awaiting {
            return resumed(head, state, standingFor: failure) ? .allow : .abandon
        }
        let plan = plan(for: head, task: task, owner: owner)
        guard case .forward(let location) = plan else {
            ledger.pendingPlan = plan
            return .abandon
        }
        switch owner.attemptResponse(consume head, location: location) {
        case .relayed:
            return .allow
        case .refused(let refusal):
            ledger.pendingPlan = .fail(refusal)
            return .abandon
        }
    }

    /// Relays body bytes; false asks the task to stop reading until the client drains.
    func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64, owner: Owner) -> Bool {
        environment.emit(taskContext(task), TaskDidReceiveData(bytes: bytes.count, totalBytes: total))
        let state = owner.responseState
        if !state.held { ledger.resume?.offset += UInt64(bytes.count) }
        return owner.attemptBody(bytes)
    }

    func taskDidSuspend(_ task: UpstreamTask) {
        environment.emit(taskContext(task), TaskDidSuspend())
    }

    func taskDidResume(_ task: UpstreamTask) {
        environment.emit(taskContext(task), TaskDidResume())
    }

    /// Metrics, then completion, then — unless the exchange itself stopped the task — what comes
    /// next: switch, go on, retry, resume, or finish. `metrics` is the exchange's to keep (handed
    /// on, not copied: it holds a dozen strings).
    func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: consuming TransactionMetrics,
              notifyExchange: Bool, owner: Owner) {
        environment.emit(taskContext(task), TaskDidGatherMetrics(metrics: self.metrics(adding: metrics, owner: owner)))
        environment.emit(taskContext(task), TaskDidComplete(error: error))
        guard notifyExchange else { return }
        // Asked while the attempt is still the current one (its records name it).
        let retry = error.flatMap { failurePlan($0, task: task, owner: owner) }
        keep(consume metrics, owner: owner)
        self.task = nil
        if error == nil, let switched = task.takeSwitchedStream() {
            owner.attemptSwitchedProtocols(task, upstream: switched.stream, leftover: switched.leftover)
            return
        }
        let state = owner.responseState
        guard !state.finished else { return }
        if let plan = ledger.pendingPlan {
            ledger.pendingPlan = nil
            proceed(with: plan, owner: owner)
            return
        }
        if state.held {
            owner.attemptEndedWhileHeld(error: error)
            return
        }
        guard let error else {
            owner.attemptsFinished()
            return
        }
        if let retry, !state.headSent {
            proceed(with: retry, owner: owner)
            return
        }
        if state.headSent, ledger.resume != nil, resumeAfter(error, owner: owner) { return }
        owner.attemptsFailed(error)
    }

    // MARK: - Resuming a broken response (`retry.rules[i].resume`)

    /// The exchange tells this of every response head it relays (with the fields the client gets):
    /// remembers whether it can be resumed.
    func noteResumable(status: Int, fields: HTTPFields, framing: BodyFraming, owner: Owner) {
        guard environment.resumesResponses else { return }
        let request = owner.requestHead
        guard request.method == .get, request.headerFields[.range] == nil else { return }
        let limit = environment.retrier.resumeLimit(forHost: ledger.request.origin.host)
        ledger.resume = ResumeState(status: status, fields: fields, framing: framing, limit: limit)
    }

    /// After a failure mid-body: asks again from where the client is, if the rule allows.
    private func resumeAfter(_ error: ProxyError, owner: Owner) -> Bool {
        let response = owner.responseState
        guard case .upstreamFailed = error, var state = ledger.resume, state.resumes < state.limit, !response.held,
              !response.finished else { return false }
        state.resumes += 1
        // A resumption that failed before its head stands for the first failure still.
        state.awaiting = state.awaiting ?? error
        ledger.resume = state
        ledger.request.set(.range, to: "bytes=\(state.offset)-")
        ledger.request.set(.ifRange, to: state.validator)
        owner.emit(RequestDidResume(offset: state.offset, validator: state.validator, attempt: owner.summary.attempts + 1,
                                    reason: error.code), for: nil)
        start(owner: owner)
        return true
    }

    /// The resumed attempt's head: spliced on when it continues the representation, else the
    /// response ends broken as it would have (nothing that does not belong is relayed).
    private func resumed(_ response: consuming ResponseHead, _ state: ResumeState, standingFor failure: ProxyError) -> Bool {
        ledger.resume?.awaiting = nil
        guard state.continues(response) else {
            ledger.resume = nil
            ledger.pendingPlan = .fail(failure)
            return false
        }
        return true
    }
}
