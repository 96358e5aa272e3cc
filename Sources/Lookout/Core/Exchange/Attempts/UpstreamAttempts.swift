import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// The upstream side of one exchange: each attempt's request (its hop head through the stages),
/// the task that sends it, and what the stages decide of its response or failure — relay it,
/// follow a redirect, try again after a backoff, resume a broken body, answer instead — with every
/// attempt's transaction. The exchange is each task's delegate and hands what its tasks report
/// to this (`UpstreamAttempts+Task.swift`), which tells the exchange what comes of it through
/// `AttemptsOwner`. The exchange is passed to each call rather than stored: it is borrowed for the
/// call, with no reference counted on the way (an existential or a stored reference would retain
/// it, or copy the whole summary on each read). Generic over the owner, so calls are direct.
final class UpstreamAttempts<Owner: AttemptsOwner>: @unchecked Sendable {  // confined to the exchange's loop queue
    let requestID: UInt64
    let context: LoopContext
    let records: ExchangeRecords
    /// The next attempt's request, and what the attempts so far leave to it.
    var ledger: AttemptLedger
    /// The running attempt, while one runs.
    var task: UpstreamTask?
    /// What the request head asked for: a protocol switch the origin may accept (RFC 9110 §7.8).
    let upgradeProtocol: String?

    var environment: ExchangeEnvironment { records.environment }

    init(requestID: UInt64, context: LoopContext, records: ExchangeRecords, ledger: AttemptLedger,
         upgradeProtocol: String?) {
        self.requestID = requestID
        self.context = context
        self.records = records
        self.ledger = ledger
        self.upgradeProtocol = upgradeProtocol
    }

    // MARK: - Starting

    /// The request for one hop: its head as `HopRequestHead` makes it, then the stages.
    func makeRequest(method: HTTPRequest.Method, origin: Origin, path: String, url: String, withBody: Bool,
                     stripCredentials: Bool, owner: Owner) -> UpstreamRequest {
        let head = owner.requestHead
        // Built in place inside the head the stages change: a separate copy would be copied
        // again by the first stage that appends a field (one allocation per request).
        var adaptation = UpstreamAdaptation(
            head: UpstreamRequestHead(method: method, target: path, authority: origin.authority, headerFields: head.headerFields),
            origin: origin)
        HopRequestHead.prepare(&adaptation, fields: head.headerFields, framing: head.framing,
                               contentLengthIsList: head.contentLengthIsList, path: path, withBody: withBody,
                               stripCredentials: stripCredentials, hostField: ledger.hostOverride,
                               upgrade: upgradeProtocol, passesProxyAuthorization: !environment.asksForCredentials)
        owner.forEachStage { $0.upstreamRequest(&adaptation, exchange: owner) }
        environment.emit(EventContext(connectionID: records.connectionID, requestID: requestID),
                         RequestDidAdaptRequest(upstreamTarget: adaptation.head.target,
                                                headerFields: adaptation.head.headerFields,
                                                rule: adaptation.rule, changes: adaptation.changes))
        return UpstreamRequest(origin: origin, method: method, url: url, target: adaptation.head.target,
                               fields: adaptation.head.headerFields,
                               bodyIsChunked: HopRequestHead.isChunked(framing: head.framing, withBody: withBody),
                               hasBody: withBody, asksForUpgrade: upgradeProtocol != nil,
                               acceptsTrailers: HopRequestHead.acceptsTrailers(head.headerFields))
    }

    /// The first hop's request (or a fetch of its own after a deferred answer withdrew), then its attempt.
    func startFirst(withBody: Bool, owner: Owner) {
        ledger.request = makeRequest(method: owner.requestHead.method, origin: ledger.request.origin,
                                     path: ledger.upstreamPath, url: owner.summary.url, withBody: withBody,
                                     stripCredentials: false, owner: owner)
        start(owner: owner)
    }

    /// Starts an attempt with the ledger's request.
    func start(owner: Owner) {
        owner.summary.attempts += 1
        let attempt = owner.summary.attempts
        // Each attempt names its own span to the origin (W3C Trace Context §3.2), a retry too.
        // Read through `summary.trace?`: bound, the trace context is copied with its strings.
        if environment.stagePlan.propagatesTrace, let traceparent = owner.summary.trace?.traceparent(attempt: attempt) {
            ledger.request.set(TraceFields.parent, to: traceparent)
        }
        let task = UpstreamTask(id: environment.makeTaskID(), attempt: attempt, request: ledger.request, requestID: requestID,
                                connectionID: records.connectionID, environment: environment.upstream, pool: context.pool,
                                events: context.delegate, delegate: owner)
        self.task = task
        owner.attemptStarts()
        owner.forEachStage { $0.attemptStarts(exchange: owner) }
        context.delegate.upstream(EventContext(connectionID: records.connectionID, requestID: requestID, taskID: task.id),
                                  didCreateFor: ledger.request.origin, attempt: attempt)
        task.start()
    }

    /// Stops the running attempt (its events are still written) and keeps its transaction.
    func stop(owner: Owner) {
        ledger.waitingForNext = false
        guard let task else { return }
        self.task = nil
        task.cancel()
        keep(task.metrics, owner: owner)
    }

    // MARK: - What becomes of an attempt

    func proceed(with plan: ResponsePlan, owner: Owner) {
        switch plan {
        case .forward:
            preconditionFailure("a forwarded response is not held back")
        case .fail(let error):
            owner.attemptsFailed(error)
        case .answer(let answer):
            owner.attemptsAnswer(answer)
        case .retry(let delay, let countsAgainstRule):
            if countsAgainstRule { ledger.retriesByRule += 1 }
            nextAttempt(after: delay, owner: owner)
        case .follow(let url, let status):
            follow(url, status: status, owner: owner)
        }
    }

    /// Starts the next attempt after `delay` seconds (on the next turn of the loop at the soonest).
    private func nextAttempt(after delay: Double, owner: Owner) {
        // Dispatch's own timer, not the loop's 50 ms deadline list: backoffs are short and exact.
        ledger.waitingForNext = true
        context.loop.execute(after: max(delay, 0)) { [weak self, weak owner] in
            guard let self, let owner, !owner.responseState.finished, ledger.waitingForNext else { return }
            ledger.waitingForNext = false
            start(owner: owner)
        }
    }

    /// The next hop of a followed redirect (RFC 9110 §15.4): same trust rules, pool and interception
    /// as a first request, the method as the status says, credentials only to the first host.
    private func follow(_ url: String, status: Int, owner: Owner) {
        guard let target = RedirectPolicy.parse(url) else {
            preconditionFailure("the redirect policy follows only absolute http(s) URLs")
        }
        owner.summary.redirects += 1
        ledger.visitedURLs.insert(ledger.request.url)
        ledger.hostOverride = nil
        let method = RedirectStatus.method(after: status, from: ledger.request.method)
        let keepsBody = ledger.request.hasBody && method == ledger.request.method
        if ledger.request.hasBody && !keepsBody { owner.dropRequestBody() }
        let key = HostRuleKey(target.host)
        let origin = Origin(host: target.host, port: target.port, isSecure: target.scheme == "https",
                            parent: environment.parentProxy(for: key), ruleKey: key)
        ledger.request = makeRequest(method: method, origin: origin, path: target.path, url: url,
                                     withBody: keepsBody, stripCredentials: origin.host != ledger.firstHost, owner: owner)
        start(owner: owner)
    }

    /// `task` as the stages that decide about attempts see it.
    func facts(_ task: UpstreamTask, owner: Owner) -> AttemptFacts {
        let response = owner.responseState
        return AttemptFacts(number: task.attempt, taskID: task.id,
                            usedReusedConnection: task.metrics.isReusedConnection,
                            receivedResponseBytes: task.receivedResponseBytes,
                            method: ledger.request.method, url: ledger.request.url, host: ledger.request.origin.host,
                            hasBody: ledger.request.hasBody,
                            bodyIsReplayable: !ledger.request.hasBody || owner.requestBodyIsReplayable,
                            redirectsFollowed: owner.summary.redirects, visitedURLs: ledger.visitedURLs,
                            retriesByRule: ledger.retriesByRule, responseReachedClient: response.headSent || response.finished)
    }

    /// What becomes of an attempt's final response: a parent's 407 for credentials the client never
    /// gave is refused; otherwise the stages decide in order (redirects, retries, the cache): a
    /// `.forward` may rewrite the `Location` and lets the next stage decide, any other plan wins;
    /// with none it is relayed.
    func plan(for response: ResponseHead, task: UpstreamTask, owner: Owner) -> ResponsePlan {
        if response.status == 407, let parent = task.origin.parent, parent.forwardsPlainRequests, !task.origin.isSecure,
           owner.requestHead.headerFields[.proxyAuthorization] == nil {
            // The parent wants credentials the client never gave: Lookout's configuration is
            // missing them, and a 407 would make the client think Lookout asks.
            return .fail(.upstreamFailed(reason: .parentProxyFailed(
                proxy: parent.description,
                detail: "answered 407 (the parent wants credentials: give them in the upstream_proxies URL)")))
        }
        let attempt = facts(task, owner: owner)
        var location: String?
        let list = owner.stageList
        return list.withUnsafeBufferPointer { stages in
            for index in stages.indices {
                guard let plan = stages[index].attemptResponse(response, attempt: attempt, exchange: owner) else { continue }
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
    func failurePlan(_ error: ProxyError, task: UpstreamTask, owner: Owner) -> ResponsePlan? {
        let attempt = facts(task, owner: owner)
        for stage in owner.stageList {
            if let plan = stage.attemptFailed(error, attempt: attempt, exchange: owner) { return plan }
        }
        return nil
    }

    // MARK: - Transactions

    /// Every transaction so far plus `current`, for `task.didGatherMetrics`.
    func metrics(adding current: TransactionMetrics, owner: Owner) -> TaskMetrics {
        var metrics = TaskMetrics(taskStart: owner.summary.start)
        metrics.transactions = (ledger.transactions.isEmpty ? owner.summary.upstream.map { [$0] } ?? []
                                                            : ledger.transactions) + [current]
        metrics.redirectCount = owner.summary.redirects
        metrics.taskEnd = .now()
        return metrics
    }

    /// Keeps a finished attempt's transaction (`AttemptLedger.keep`).
    func keep(_ metrics: consuming TransactionMetrics, owner: Owner) {
        ledger.keep(consume metrics, in: &owner.summary.upstream)
    }
}
