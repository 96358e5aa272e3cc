/// One signal's records waiting for export, already encoded in the wire protocol and gathered in
/// batches of at most `maxRecords`: the monitor appends records' bytes, the exporter takes a
/// whole batch, and no record value is kept or copied on the way. At most `maxQueue` records
/// wait; what comes beyond is dropped (and counted by the caller).
struct EncodedQueue {
    struct Batch {
        var bytes: [UInt8] = []
        var count = 0
        /// When its first record arrived (`Instant` nanoseconds): `max_delay_ms` counts from it.
        var since: UInt64
    }

    private(set) var batches: [Batch] = []
    private(set) var total = 0
    /// The size of the last batch that filled up: a new batch reserves that much, so it is not
    /// grown (and copied) a dozen times on the way to `maxRecords` records.
    private var fullBatchBytes = 0
    /// Storage of batches already sent, emptied, for the next batches: memory whose pages are
    /// in place. A new allocation of this size was a fresh mapping, and filling it took a page
    /// fault every 4 KiB on the monitor's queue.
    private(set) var spare: [[UInt8]] = []
    static let maximumSpare = 2
    let maxRecords: Int
    let maxQueue: Int
    /// Between two records of a batch: "," in OTLP/JSON's arrays, nothing between protobuf fields.
    let separator: [UInt8]

    init(maxRecords: Int, maxQueue: Int, separator: [UInt8]) {
        self.maxRecords = maxRecords
        self.maxQueue = maxQueue
        self.separator = separator
    }

    /// Appends the records that `ends` marks off in `bytes` (each ends where the next begins);
    /// returns how many did not fit. `now` is read only when a batch begins.
    mutating func append(_ bytes: UnsafeRawBufferPointer, ends: [Int], now: @autoclosure () -> UInt64) -> Int {
        var start = 0
        var dropped = 0
        for end in ends {
            defer { start = end }
            guard total < maxQueue else {
                dropped += 1
                continue
            }
            if batches.isEmpty || batches[batches.count - 1].count >= maxRecords {
                var batch = Batch(since: now())
                if let storage = spare.popLast() {
                    batch.bytes = storage
                } else {
                    batch.bytes.reserveCapacity(fullBatchBytes)
                }
                batches.append(batch)
            }
            let last = batches.count - 1
            if batches[last].count > 0 { batches[last].bytes += separator }
            batches[last].bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            batches[last].count += 1
            if batches[last].count == maxRecords { fullBatchBytes = batches[last].bytes.count }
            total += 1
        }
        return dropped
    }

    var isEmpty: Bool { total == 0 }
    /// When the oldest waiting record arrived.
    var oldest: UInt64? { batches.first?.since }
    var hasFullBatch: Bool { (batches.first?.count ?? 0) >= maxRecords }

    /// Takes back the storage of a batch the exporter has sent (emptied, its capacity kept),
    /// leaving `bytes` empty; at most `maximumSpare` are kept.
    mutating func recycle(_ bytes: inout [UInt8]) {
        var storage: [UInt8] = []
        swap(&storage, &bytes)
        guard spare.count < Self.maximumSpare else { return }
        storage.removeAll(keepingCapacity: true)
        spare.append(storage)
    }

    mutating func takeFirst() -> Batch? {
        guard !batches.isEmpty else { return nil }
        let batch = batches.removeFirst()
        total -= batch.count
        return batch
    }
}
