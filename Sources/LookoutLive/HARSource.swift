import LookoutLogQuery

/// `GET /exchanges.har`: the ring's exchanges as one HAR 1.2 document, made entry by entry (an
/// entry may inline a captured body of up to 16 MiB, so the document is never built whole).
struct HARSource: PacedSource {
    /// Oldest first, as HAR lists its entries.
    private let records: [LiveRecord]
    private let version: String
    /// The next record to consider.
    private var nextRecord = 0
    /// Entries made so far (the first has no leading comma).
    private var written = 0
    private var wroteHeader = false
    private var wroteFooter = false

    init(records: [LiveRecord], version: String) {
        self.records = records
        self.version = version
    }

    mutating func next() -> [UInt8]? {
        if !wroteHeader {
            wroteHeader = true
            return Array(HARFormat.header(creatorVersion: version).utf8)
        }
        while nextRecord < records.count {
            let index = written
            let entry = records[nextRecord].line.withUnsafeBufferPointer { line in
                LogRecord(line).map { Array(HARFormat.entry($0, index: index).utf8) }
            }
            nextRecord += 1
            if let entry {
                written += 1
                return entry
            }
        }
        if !wroteFooter {
            wroteFooter = true
            return Array(HARFormat.footer.utf8)
        }
        return nil
    }

    mutating func close() {}
}
