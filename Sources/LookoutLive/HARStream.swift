import Lookout
import LookoutLogQuery
import Synchronization

/// `GET /exchanges.har`: the ring's exchanges as one HAR 1.2 document, written entry by entry
/// behind the bounded sink (an entry may inline a captured body of up to 16 MiB, so the
/// document is never built whole).
final class HARStream: AdminStreamProducer, @unchecked Sendable {  // `state` under its lock
    private struct State {
        var sink: AdminStreamSink?
        /// The next record to consider.
        var next = 0
        /// Entries written so far (the first has no leading comma).
        var written = 0
        var wroteHeader = false
        var wroteFooter = false
        /// Made but not yet taken by the sink.
        var pending: [UInt8]?
    }

    private let records: [LiveRecord]
    private let version: String
    private let state = Mutex(State())

    /// `records` oldest first, as HAR lists its entries.
    init(records: [LiveRecord], version: String) {
        self.records = records
        self.version = version
    }

    func start(_ sink: AdminStreamSink) {
        state.withLock { $0.sink = sink }
        pump()
    }

    func stop() {
        state.withLock { $0.sink = nil }
    }

    private enum Step {
        case send(AdminStreamSink, [UInt8])
        case done(AdminStreamSink)
        case stopped
    }

    private func pump() {
        while true {
            switch state.withLock({ nextStep(&$0) }) {
            case .stopped:
                return
            case .done(let sink):
                sink.finish()
                stop()
                return
            case .send(let sink, let bytes):
                guard sink.send(bytes) else {
                    if sink.hasEnded { stop(); return }
                    sink.whenDrained { [self] in pump() }
                    return
                }
                state.withLock { $0.pending = nil }
            }
        }
    }

    /// What goes out next: the bytes the sink refused last time, the head, the next entry that
    /// parses, the footer, or nothing more.
    private func nextStep(_ state: inout State) -> Step {
        guard let sink = state.sink else { return .stopped }
        if let pending = state.pending { return .send(sink, pending) }
        var bytes: [UInt8]?
        if !state.wroteHeader {
            state.wroteHeader = true
            bytes = Array(HARFormat.header(creatorVersion: version).utf8)
        }
        while bytes == nil && state.next < records.count {
            let index = state.written
            bytes = records[state.next].line.withUnsafeBufferPointer { line in
                LogRecord(line).map { Array(HARFormat.entry($0, index: index).utf8) }
            }
            state.next += 1
            if bytes != nil { state.written += 1 }
        }
        if bytes == nil && !state.wroteFooter {
            state.wroteFooter = true
            bytes = Array(HARFormat.footer.utf8)
        }
        guard let bytes else { return .done(sink) }
        state.pending = bytes
        return .send(sink, bytes)
    }
}
