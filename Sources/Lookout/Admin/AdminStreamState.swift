import LookoutAdmin
import LookoutModel
import LookoutUpstream

/// What a client connection keeps while it streams an admin body.
///
/// A class, so the connection's field is one pointer: held inline, the summary made every
/// `ClientConnection` about 1 KiB larger, idle ones included (2.2 KiB against 1.2 KiB per
/// idle keep-alive connection, `Tests/bench/idle_rss.py`).
final class AdminStreamState {
    let sink: AdminStreamSink
    let producer: AdminStreamProducer
    /// The record written when the stream ends.
    let summary: ExchangeSummary

    init(sink: AdminStreamSink, producer: AdminStreamProducer, summary: ExchangeSummary) {
        self.sink = sink
        self.producer = producer
        self.summary = summary
    }
}
