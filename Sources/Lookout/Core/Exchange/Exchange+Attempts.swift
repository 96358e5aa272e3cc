import HTTPTypes
import LookoutHTTP
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What becomes of each attempt, as the stages decide (`attemptResponse`, `attemptFailed`):
/// another attempt after a backoff, a followed redirect, an answer instead; and the metrics of
/// every attempt.
extension Exchange {
    func proceed(with plan: ResponsePlan) {
        switch plan {
        case .forward:
            preconditionFailure("a forwarded response is not held back")
        case .fail(let error):
            fail(error)
        case .answer(let answer):
            self.answer(answer, phase: answer.phase ?? "answering")
        case .retry(let delay, let countsAgainstRule):
            if countsAgainstRule { attempts.retriesByRule += 1 }
            nextAttempt(after: delay)
        case .follow(let url, let status):
            follow(url, status: status)
        }
    }

    /// Starts the next attempt after `delay` seconds (on the next turn of the loop at the soonest).
    private func nextAttempt(after delay: Double) {
        // Dispatch's own timer, not the loop's 50 ms deadline list: backoffs are short and exact.
        attempts.waitingForNext = true
        context.loop.execute(after: max(delay, 0)) { [weak self] in
            guard let self, !finished, attempts.waitingForNext else { return }
            attempts.waitingForNext = false
            startAttempt()
        }
    }

    /// The next hop of a followed redirect (RFC 9110 §15.4): same trust rules, pool and interception
    /// as a first request, the method as the status says, credentials only to the first host.
    private func follow(_ url: String, status: Int) {
        guard let target = RedirectPolicy.parse(url) else {
            preconditionFailure("the redirect policy follows only absolute http(s) URLs")
        }
        summary.redirects += 1
        attempts.visitedURLs.insert(attempts.request.url)
        attempts.hostOverride = nil
        let method = RedirectStatus.method(after: status, from: attempts.request.method)
        let keepsBody = attempts.request.hasBody && method == attempts.request.method
        if attempts.request.hasBody && !keepsBody { dropRequestBody() }
        let key = HostRuleKey(target.host)
        let origin = Origin(host: target.host, port: target.port, isSecure: target.scheme == "https",
                            parent: environment.parentProxy(for: key), ruleKey: key)
        attempts.request = makeUpstreamRequest(method: method, origin: origin, path: target.path, url: url,
                                      withBody: keepsBody, stripCredentials: origin.host != attempts.firstHost)
        startAttempt()
    }

    /// `task` as the stages that decide about attempts see it.
    func facts(_ task: UpstreamTask) -> AttemptFacts {
        AttemptFacts(number: task.attempt, taskID: task.id,
                     usedReusedConnection: task.metrics.isReusedConnection,
                     receivedResponseBytes: task.receivedResponseBytes,
                     method: attempts.request.method, url: attempts.request.url, host: attempts.request.origin.host, hasBody: attempts.request.hasBody,
                     bodyIsReplayable: bodyIsReplayable, redirectsFollowed: summary.redirects, visitedURLs: attempts.visitedURLs,
                     retriesByRule: attempts.retriesByRule, responseReachedClient: reply.headSent || finished)
    }

    /// What becomes of an attempt's final response: a parent's 407 for credentials the client never
    /// gave is refused; otherwise the stages decide in order (redirects, retries, the cache): a
    /// `.forward` may rewrite the `Location` and lets the next stage decide, any other plan wins;
    /// with none it is relayed.
    func attemptPlan(for response: ResponseHead, task: UpstreamTask) -> ResponsePlan {
        if response.status == 407, let parent = task.origin.parent, parent.forwardsPlainRequests, !task.origin.isSecure, !clientSentProxyAuthorization {
            // The parent wants credentials the client never gave: Lookout's configuration is
            // missing them, and a 407 would make the client think Lookout asks.
            return .fail(.upstreamFailed(reason: .parentProxyFailed(
                proxy: parent.description,
                detail: "answered 407 (the parent wants credentials: give them in the upstream_proxies URL)")))
        }
        let attempt = facts(task)
        var location: String?
        let list = stages
        return list.withUnsafeBufferPointer { stages in
            for index in stages.indices {
                guard let plan = stages[index].attemptResponse(response, attempt: attempt, exchange: self) else { continue }
                if case .forward(let rewritten) = plan {
                    location = rewritten ?? location
                    continue
                }
                return plan
            }
            return .forward(location: location)
        }
    }

    /// What becomes of an attempt that failed: the first stage with a plan decides (a retry); nil
    /// lets the failure stand.
    func failurePlan(_ error: ProxyError, task: UpstreamTask) -> ResponsePlan? {
        let attempt = facts(task)
        for stage in stages {
            if let plan = stage.attemptFailed(error, attempt: attempt, exchange: self) { return plan }
        }
        return nil
    }

    private var bodyIsReplayable: Bool {
        !attempts.request.hasBody || (upload?.isReplayable ?? false)
    }

    /// Every transaction so far plus `current`, for `task.didGatherMetrics`.
    func metrics(adding current: TransactionMetrics) -> TaskMetrics {
        var metrics = TaskMetrics(taskStart: summary.start)
        metrics.transactions = (attempts.transactions.isEmpty ? summary.upstream.map { [$0] } ?? [] : attempts.transactions) + [current]
        metrics.redirectCount = summary.redirects
        metrics.taskEnd = .now()
        return metrics
    }

    /// Keeps a finished attempt's transaction (`AttemptLedger.keep`).
    func record(_ metrics: consuming TransactionMetrics) {
        attempts.keep(consume metrics, in: &summary.upstream)
    }

    /// Stops the running attempt (its events are still written) and keeps its transaction.
    func stopTask() {
        attempts.waitingForNext = false
        guard let task else { return }
        self.task = nil
        task.cancel()
        record(task.metrics)
    }

    // MARK: - Resuming a broken response (`retry.rules[i].resume`)

    /// Called for every response head that is to be relayed: remembers whether it can be resumed.
    func noteResumable(status: Int, fields: HTTPFields, framing: BodyFraming) {
        guard head.method == .get, head.headerFields[.range] == nil else { return }
        let limit = environment.retrier.resumeLimit(forHost: attempts.request.origin.host)
        attempts.resume = ResumeState(status: status, fields: fields, framing: framing, limit: limit)
    }

    /// After a failure mid-body: asks again from where the client is, if the rule allows.
    func resumeAfter(_ error: ProxyError) -> Bool {
        guard case .upstreamFailed = error, var state = attempts.resume, state.resumes < state.limit, holding.response == nil, !finished
        else { return false }
        state.resumes += 1
        // A resumption that failed before its head stands for the first failure still.
        state.awaiting = state.awaiting ?? error
        attempts.resume = state
        attempts.request.set(.range, to: "bytes=\(state.offset)-")
        attempts.request.set(.ifRange, to: state.validator)
        emit(RequestDidResume(offset: state.offset, validator: state.validator, attempt: summary.attempts + 1,
                              reason: error.code))
        startAttempt()
        return true
    }

    /// The resumed attempt's head: spliced on when it continues the representation, else the
    /// response ends broken as it would have (nothing that does not belong is relayed).
    func resumedResponse(_ response: consuming ResponseHead, _ state: ResumeState, standingFor failure: ProxyError) -> Bool {
        attempts.resume?.awaiting = nil
        guard state.continues(response) else {
            attempts.resume = nil
            attempts.pendingPlan = .fail(failure)
            return false
        }
        return true
    }
}
