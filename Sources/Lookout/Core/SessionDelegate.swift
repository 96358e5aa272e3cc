import HTTPTypes
import LookoutHTTP
import LookoutIO
import Logging

/// Receives every upstream transport callback, tells the monitors first, then the policies, then
/// the exchange, which it finds through the loop's `RequestTaskMap` (the state provider).
final class SessionDelegate: @unchecked Sendable {  // methods run on the calling task's loop queue
    /// `unowned(unsafe)`: the session owns its delegate and outlives it, and the checked kind
    /// costs an atomic increment and decrement on every one of the several uses per request.
    unowned(unsafe) let session: Session

    init(session: Session) {
        self.session = session
    }

    private func request(for task: UpstreamTask) -> ProxyRequest {
        guard let request = task.context.taskMap.request(forTask: task.id) else {
            preconditionFailure("task \(task.id) reported after leaving the request-task map")
        }
        return request
    }

    private func context(_ task: UpstreamTask) -> EventContext {
        EventContext(connectionID: task.connectionID, requestID: task.requestID, taskID: task.id)
    }

    // MARK: - Connection

    func taskDidCreate(_ task: UpstreamTask) {
        session.emit(.lifecycle) { .didCreateTask(context(task), origin: task.origin.authority, attempt: task.attempt) }
    }

    func task(_ task: UpstreamTask, didResolve resolution: Resolution, host: String, milliseconds: Double) {
        session.emit(.lifecycle) {
            .didResolve(context(task), host: host, addresses: resolution.addresses.map(\.ipText),
                        milliseconds: milliseconds, cached: resolution.fromCache)
        }
    }

    func task(_ task: UpstreamTask, didConnect connection: ByteStream, milliseconds: Double) {
        session.emit(.lifecycle) {
            .didConnect(context(task), address: connection.peerAddress?.description ?? "", milliseconds: milliseconds)
        }
    }

    func task(_ task: UpstreamTask, didReuse connection: ByteStream) {
        session.emit(.lifecycle) {
            .didReuseConnection(context(task), address: connection.peerAddress?.description ?? "",
                                upstreamConnectionID: connection.id)
        }
    }

    func task(_ task: UpstreamTask, didReceiveChallengeFor host: String, rule: String, evaluator: String) {
        session.emit(.lifecycle) { .didReceiveChallenge(context(task), host: host, rule: rule, evaluator: evaluator) }
    }

    func task(_ task: UpstreamTask, didEvaluateServerTrust decision: TrustDecision) {
        session.emit(.lifecycle) { .didEvaluateServerTrust(context(task), decision) }
        if decision.evaluator.contains("disabled") {
            session.logger.warning("trust evaluation is disabled for \(decision.host) (rule \(decision.rule)): any certificate is accepted")
        }
        if decision.outcome != .passed {
            let level: Logger.Level = decision.outcome == .failed ? .warning : .notice
            session.logger.log(level: level, "trust rule \(decision.rule) \(decision.outcome == .failed ? "refused" : "reported") \(decision.host): \(decision.reason ?? "") \(decision.message ?? "")")
        }
    }

    // MARK: - Request

    func taskIsReadyForBody(_ task: UpstreamTask) {
        request(for: task).taskIsReadyForBody(task)
    }

    func task(_ task: UpstreamTask, didSendBodyData bytes: Int) {
        session.emit(.lifecycle) {
            .didSendBodyData(context(task), bytesSent: bytes, totalBytesSent: task.metrics.requestBodyBytes)
        }
    }

    // MARK: - Response

    func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead) {
        session.emit(.lifecycle) {
            .didReceiveResponse(context(task), status: head.status, reasonPhrase: head.reasonPhrase, headerFields: head.headerFields)
        }
        request(for: task).taskDidReceiveInformational(head)
    }

    func task(_ task: UpstreamTask, didReceiveResponse head: ResponseHead) {
        let request = request(for: task)
        session.emit(.lifecycle) {
            .didReceiveResponse(context(task), status: head.status, reasonPhrase: head.reasonPhrase, headerFields: head.headerFields)
        }
        if (300..<400).contains(head.status), let location = head.headerFields[.location] {
            let decision = session.redirectHandler.decision(forStatus: head.status, location: location,
                                                            requestURL: request.head.rawTarget)
            session.emit(.lifecycle) {
                .willPerformRedirect(context(task), status: head.status, location: location, decision: decision.rawValue)
            }
        }
        if let cacher = session.cachedResponseHandler {
            let decision = cacher.decision(forStatus: head.status, method: request.head.method.rawValue,
                                           url: request.head.rawTarget)
            session.emit(.lifecycle) { .willCacheResponse(context(task), decision: decision.rawValue) }
        }
        request.taskDidReceiveResponse(head)
    }

    /// Returns false when the client is backed up.
    func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64) -> Bool {
        session.emit(.lifecycle) { .didReceiveData(context(task), bytes: bytes.count, totalBytes: total) }
        return request(for: task).taskDidReceiveData(bytes)
    }

    func task(_ task: UpstreamTask, didFinishResponseWith trailers: HTTPFields?) {
        request(for: task).taskDidFinishResponse(trailers: trailers)
    }

    func taskDidSuspend(_ task: UpstreamTask) {
        session.emit(.lifecycle) { .didSuspendTask(context(task)) }
    }

    func taskDidResume(_ task: UpstreamTask) {
        session.emit(.lifecycle) { .didResumeTask(context(task)) }
    }

    // MARK: - Completion

    /// Metrics first, then completion (the map forgets the task only after both), then the exchange.
    func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: TransactionMetrics, notifyRequest: Bool) {
        let map = task.context.taskMap
        let request = request(for: task)
        session.emit(.lifecycle) {
            var all = TaskMetrics(taskStart: metrics.fetchStart)
            all.transactions = [metrics]
            all.taskEnd = .now()
            return .didGatherMetrics(context(task), all)
        }
        map.disassociateIfNecessaryAfterGatheringMetrics(task)
        session.emit(.lifecycle) { .didCompleteTask(context(task), error: error) }
        map.disassociateIfNecessaryAfterCompleting(task)
        if notifyRequest {
            request.taskDidComplete(task, metrics: metrics, error: error)
        }
    }
}
