import LookoutAdmin
import LookoutLogQuery
import LookoutModel

/// One `GET /events` client: the records it asked for, framed as Server-Sent Events (WHATWG HTML
/// §9.2), into a bounded sink. A client that reads too slowly loses records, never slows the
/// proxy: each loss is counted, and the next record it does get is preceded by a `dropped` event
/// with the count.
final class EventSubscriber: AdminStreamProducer, @unchecked Sendable {  // `sink`, `stopped`, `dropped`, `awaitingDrain` confined to `LiveMonitor.queue`
    private let hub: LiveMonitor
    let filter: LogFilter?
    /// The filter as written, "" for none: subscribers with the same text form one audience,
    /// and the filter runs once per record for all of them (`LiveMonitor.fanOut`).
    let audienceKey: String
    let verbose: Bool
    let lastEventID: UInt64?
    private var sink: AdminStreamSink?
    /// The client went away; set on the hub's queue after (never before) `start`'s turn there.
    private var stopped = false
    /// Records lost since the last `dropped` event was sent.
    private var dropped: UInt64 = 0
    /// A drain notice is awaited to send the `dropped` event.
    private var awaitingDrain = false

    /// `filterText` is the text `filter` was parsed from (never blank when `filter` is set).
    init(hub: LiveMonitor, filter: LogFilter?, filterText: String, verbose: Bool, lastEventID: UInt64?) {
        self.hub = hub
        self.filter = filter
        self.audienceKey = filter == nil ? "" : filterText
        self.verbose = verbose
        self.lastEventID = lastEventID
    }

    /// `start` and `stop` are called on the connection's loop in that order, and each takes one
    /// turn on the hub's serial queue, so a client that leaves at once is removed after it was added.
    func start(_ sink: AdminStreamSink) {
        hub.queue.async { [self] in
            self.sink = sink
            // The reconnection delay EventSource waits after a drop, and a first line so clients
            // see the stream open before the first record.
            sink.send(Array("retry: 2000\n: lookout live events\n\n".utf8))
            hub.register(self)
        }
    }

    func stop() {
        hub.queue.async { [self] in
            stopped = true
            sink = nil
            hub.unregister(self)
        }
    }

    /// The SSE frame of a record: its sequence as `id:`, its JSON as `data:`.
    static func frame(_ sequence: UInt64, _ line: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(line.count + 32)
        frame += Array("id: \(sequence)\ndata: ".utf8)
        frame += line
        frame += [UInt8(ascii: "\n"), UInt8(ascii: "\n")]
        return frame
    }

    /// On the hub's queue: sends `frame`, a record of `kind` that this subscriber's audience
    /// asked for (its filter, if any, has matched).
    func deliver(_ kind: LiveRecord.Kind, frame: [UInt8]) {
        guard let sink, !stopped else { return }
        if kind == .lifecycle && !verbose { return }
        // Still backed up since the last loss: lose this one too without touching the sink.
        if awaitingDrain {
            dropped += 1
            hub.countDropped()
            return
        }
        guard sendDropNotice(sink) else {
            lose()
            return
        }
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
        // A stream whose client has gone (its removal is on its way here) loses nothing.
        guard let sink, !sink.hasEnded else { return }
        dropped += 1
        hub.countDropped()
        // The count is told as soon as the backlog has gone out, even if no record follows.
        guard !awaitingDrain else { return }
        awaitingDrain = true
        sink.whenDrained { [self] in
            hub.queue.async { [self] in
                awaitingDrain = false
                if let sink = self.sink, !stopped, !sendDropNotice(sink) { lose() }
            }
        }
    }

    func sendHeartbeat() {
        guard !stopped else { return }
        sink?.send(Array(": heartbeat\n\n".utf8))
    }
}
