import Lookout
import LookoutLogQuery

/// One `GET /events` client: the records it asked for, framed as Server-Sent Events (WHATWG HTML
/// §9.2), into a bounded sink. A client that reads too slowly loses records, never slows the
/// proxy: each loss is counted, and the next record it does get is preceded by a `dropped` event
/// with the count.
final class EventSubscriber: AdminStreamProducer, @unchecked Sendable {  // `sink`, `dropped`, `awaitingDrain` confined to `LiveMonitor.queue`
    private let hub: LiveMonitor
    let filter: LogFilter?
    let verbose: Bool
    let lastEventID: UInt64?
    private var sink: AdminStreamSink?
    /// Records lost since the last `dropped` event was sent.
    private var dropped: UInt64 = 0
    /// A drain notice is awaited to send the `dropped` event.
    private var awaitingDrain = false

    init(hub: LiveMonitor, filter: LogFilter?, verbose: Bool, lastEventID: UInt64?) {
        self.hub = hub
        self.filter = filter
        self.verbose = verbose
        self.lastEventID = lastEventID
    }

    func start(_ sink: AdminStreamSink) {
        hub.queue.async { [self] in
            self.sink = sink
            // The reconnection delay EventSource waits after a drop, and a first line so clients
            // see the stream open before the first record.
            sink.send(Array("retry: 2000\n: lookout live events\n\n".utf8))
            hub.subscribe(self)
        }
    }

    func stop() {
        hub.unsubscribe(self)
    }

    /// On the hub's queue: frames `record` if this subscriber wants it.
    func deliver(_ record: LiveRecord) {
        guard let sink else { return }
        if record.kind == .lifecycle && !verbose { return }
        if let filter {
            let matches = record.line.withUnsafeBufferPointer { bytes in
                LogRecord(bytes).map(filter.matches) ?? false
            }
            if !matches { return }
        }
        guard sendDropNotice(sink) else {
            lose()
            return
        }
        var frame: [UInt8] = []
        frame.reserveCapacity(record.line.count + 32)
        frame += Array("id: \(record.sequence)\ndata: ".utf8)
        frame += record.line
        frame += [UInt8(ascii: "\n"), UInt8(ascii: "\n")]
        if !sink.send(frame) { lose() }
    }

    /// Sends the `dropped` event owed, if any; false when even that does not fit.
    private func sendDropNotice(_ sink: AdminStreamSink) -> Bool {
        guard dropped > 0 else { return true }
        guard sink.send(Array("event: dropped\ndata: {\"dropped\":\(dropped)}\n\n".utf8)) else { return false }
        dropped = 0
        return true
    }

    private func lose() {
        dropped += 1
        hub.countDropped()
        // The count is told as soon as the backlog has gone out, even if no record follows.
        guard !awaitingDrain, let sink else { return }
        awaitingDrain = true
        sink.whenDrained { [self] in
            hub.queue.async { [self] in
                awaitingDrain = false
                if let sink = self.sink, !sendDropNotice(sink) { lose() }
            }
        }
    }

    func sendHeartbeat() {
        sink?.send(Array(": heartbeat\n\n".utf8))
    }
}
