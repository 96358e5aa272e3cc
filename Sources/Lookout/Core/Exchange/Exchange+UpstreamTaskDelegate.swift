import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// The exchange is the delegate of each attempt it starts: a task reports straight to it, with no
/// look-up on the way. Each report tells the monitors first (`environment.emit`, built only when a
/// monitor wants the kind), then the exchange, whose stages decide what becomes of the response.
extension Exchange: UpstreamTaskDelegate {
    private func taskContext(_ task: UpstreamTask) -> EventContext {
        EventContext(connectionID: task.connectionID, requestID: id, taskID: task.id)
    }

    func taskIsReadyForBody(_ task: UpstreamTask) {
        taskIsReadyForBody()
    }

    func task(_ task: UpstreamTask, didSendBodyData bytes: Int) {
        environment.emit(taskContext(task), TaskDidSendBodyData(bytesSent: bytes, totalBytesSent: task.metrics.requestBodyBytes))
    }

    func taskDidDrainRequestBody(_ task: UpstreamTask) {
        taskDidDrainRequestBody()
    }

    func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead) {
        environment.emit(taskContext(task), TaskDidReceiveResponse(status: head.status, reasonPhrase: head.reasonPhrase,
                                                                   headerFields: head.headerFields))
        taskDidReceiveInformational(head)
    }

    /// `head` is the exchange's to keep: handed on, not copied, so the exchange can add its own
    /// fields without copying the origin's (copy-on-write, two owners).
    func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead) -> ResponseDisposition {
        environment.emit(taskContext(task), TaskDidReceiveResponse(status: head.status, reasonPhrase: head.reasonPhrase,
                                                                   headerFields: head.headerFields))
        // The exchange may hold the response back (another attempt, or the cache answers instead).
        return taskDidReceiveResponse(consume head, task: task) ? .allow : .abandon
    }

    func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64) -> Bool {
        environment.emit(taskContext(task), TaskDidReceiveData(bytes: bytes.count, totalBytes: total))
        return taskDidReceiveData(bytes)
    }

    func task(_ task: UpstreamTask, didFinishResponseWith trailers: HTTPFields?) {
        taskDidFinishResponse(trailers: trailers)
    }

    func taskDidSuspend(_ task: UpstreamTask) {
        environment.emit(taskContext(task), TaskDidSuspend())
    }

    func taskDidResume(_ task: UpstreamTask) {
        environment.emit(taskContext(task), TaskDidResume())
    }

    /// Metrics, then completion, then — unless the exchange itself stopped the task — what comes
    /// next. `metrics` is the exchange's to keep (handed on, not copied: it holds a dozen strings).
    func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: consuming TransactionMetrics,
              notifyExchange: Bool) {
        environment.emit(taskContext(task), TaskDidGatherMetrics(metrics: self.metrics(adding: metrics)))
        environment.emit(taskContext(task), TaskDidComplete(error: error))
        guard notifyExchange else { return }
        taskDidComplete(task, metrics: consume metrics, error: error)
    }
}
