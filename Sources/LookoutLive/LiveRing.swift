#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import LookoutSync

/// The most recent records, oldest overwritten first (`ui.ring_size`). Appended on the live
/// monitor's queue, read by admin requests on the event loops; readers get copies.
///
/// The records' bytes are written one after another into blocks mapped for the ring alone
/// (`LiveRingBlocks`), and a block is unmapped (or kept as the one spare) once no kept record is
/// in it. One heap allocation per record would come from the malloc arena of whichever Dispatch
/// thread runs the monitor's queue (glibc gives each thread an arena): each time the queue moves
/// to another thread, the ring's megabytes would be allocated again in that thread's arena while
/// the old arena kept its pages, and the process would grow by about the ring's size. In blocks of
/// its own, the ring takes what its records need, whatever thread writes them.
final class LiveRing: Sendable {
    private struct Entry {
        var sequence: UInt64
        var kind: LiveRecord.Kind
        var exchangeID: UInt64?
        var place: LiveRingBlocks.Place
    }

    private struct Storage: ~Copyable {
        var entries: [Entry?]
        /// Where the next record goes.
        var next = 0
        var count = 0
        var blocks = LiveRingBlocks()

        /// The slot of the oldest kept entry.
        var oldest: Int { (next - count + entries.count) % entries.count }

        /// The kept entries' slots, oldest first.
        func slots() -> some Sequence<Int> {
            let first = oldest, capacity = entries.count
            return (0..<count).lazy.map { (first + $0) % capacity }
        }

        func record(_ slot: Int) -> LiveRecord? {
            guard let entry = entries[slot] else { return nil }
            return LiveRecord(sequence: entry.sequence, kind: entry.kind, exchangeID: entry.exchangeID,
                              line: blocks.bytes(at: entry.place))
        }
    }

    private let storage: Guarded<Storage>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage = Guarded(Storage(entries: Array(repeating: nil, count: max(1, capacity))))
    }

    /// Keeps `record`; false when no memory could be mapped for its bytes (it is not kept, and
    /// the ring's older records stay).
    @discardableResult
    func append(_ record: LiveRecord) -> Bool {
        storage.withLock { s in
            guard let place = record.line.withUnsafeBytes({ s.blocks.store($0) }) else { return false }
            s.entries[s.next] = Entry(sequence: record.sequence, kind: record.kind, exchangeID: record.exchangeID,
                                      place: place)
            s.next = (s.next + 1) % capacity
            s.count = min(s.count + 1, capacity)
            // The oldest kept record's block is the first still needed.
            if let oldest = s.entries[s.oldest] {
                s.blocks.release(before: oldest.place.block)
            }
            return true
        }
    }

    /// Bytes the ring holds mapped (its blocks and the spare).
    var mappedBytes: Int { storage.withLock { $0.blocks.mappedBytes } }

    /// Every record still held, oldest first.
    func all() -> [LiveRecord] {
        storage.withLock { s in s.slots().compactMap { s.record($0) } }
    }

    /// The records of exchange `id`, oldest first.
    func records(exchange id: UInt64) -> [LiveRecord] {
        storage.withLock { s in
            s.slots().filter { s.entries[$0]?.exchangeID == id }.compactMap { s.record($0) }
        }
    }

    /// The records after `sequence`, oldest first (a resuming stream).
    func records(after sequence: UInt64) -> [LiveRecord] {
        storage.withLock { s in
            s.slots().filter { (s.entries[$0]?.sequence ?? 0) > sequence }.compactMap { s.record($0) }
        }
    }

    /// Up to `limit` records, newest first, older than `before` when given, that pass `include`.
    func newest(limit: Int, before: UInt64?, where include: (LiveRecord) -> Bool) -> [LiveRecord] {
        storage.withLock { s in
            var out: [LiveRecord] = []
            for slot in Array(s.slots()).reversed() where out.count < limit {
                if let before, let entry = s.entries[slot], entry.sequence >= before { continue }
                if let record = s.record(slot), include(record) { out.append(record) }
            }
            return out
        }
    }
}
