import LookoutMessages
import LookoutModel

/// The messages inside the exchange's streamed bodies (`MessagesStage` decides which).
extension Exchange {
    /// The exchange's watch, made on first use for `format`.
    func watchStream(_ format: StreamFormat, settings: MessagesSettings) -> StreamWatch {
        if let streamWatch { return streamWatch }
        let watch = StreamWatch(format: format, settings: settings, environment: environment, eventContext: requestContext,
                                start: summary.start, capture: environment.stagePlan.messageCapture(for: clientKey))
        streamWatch = watch
        return watch
    }

    /// When the current attempt finished sending the request, if it has.
    var requestSentAt: Instant? { task?.metrics.requestEnd }

    /// The current attempt's upstream TLS (`audit`).
    var upstreamTLS: UpstreamTLSDetails? { task?.metrics.tls }

    /// Writes the `messages` object (and the messages file's path) into the summary.
    func finishStreamWatch() {
        guard let watch = streamWatch else { return }
        streamWatch = nil
        let (messages, path) = watch.finish()
        summary.messages = messages
        if let path {
            var capture = summary.capture ?? CaptureSummary()
            capture.messages = path
            summary.capture = capture
        }
    }

    /// What the in-flight view shows of the messages so far.
    var streamMessagesSoFar: MessagesSummary? { streamWatch?.summary }
}
