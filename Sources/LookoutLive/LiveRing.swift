import LookoutSync

/// The most recent records, oldest overwritten first (`ui.ring_size`). Appended on the live
/// monitor's queue, read by admin requests on the event loops.
final class LiveRing: Sendable {
    private struct Storage {
        var slots: [LiveRecord?]
        /// Where the next record goes.
        var next = 0
        var count = 0
    }

    private let storage: Guarded<Storage>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage = Guarded(Storage(slots: Array(repeating: nil, count: max(1, capacity))))
    }

    func append(_ record: LiveRecord) {
        storage.withLock { s in
            s.slots[s.next] = record
            s.next = (s.next + 1) % capacity
            s.count = min(s.count + 1, capacity)
        }
    }

    /// Every record still held, oldest first.
    func all() -> [LiveRecord] {
        storage.withLock { s in
            var out: [LiveRecord] = []
            out.reserveCapacity(s.count)
            let first = (s.next - s.count + capacity) % capacity
            for offset in 0..<s.count {
                if let record = s.slots[(first + offset) % capacity] { out.append(record) }
            }
            return out
        }
    }

    /// The records after `sequence`, oldest first (a resuming stream).
    func records(after sequence: UInt64) -> [LiveRecord] {
        all().filter { $0.sequence > sequence }
    }

    /// Up to `limit` records, newest first, older than `before` when given, that pass `include`.
    func newest(limit: Int, before: UInt64?, where include: (LiveRecord) -> Bool) -> [LiveRecord] {
        var out: [LiveRecord] = []
        for record in all().reversed() where out.count < limit {
            if let before, record.sequence >= before { continue }
            if include(record) { out.append(record) }
        }
        return out
    }
}
