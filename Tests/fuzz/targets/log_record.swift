import LookoutLogQuery

/// The log reader behind `lookout log`, `replay` and `diff`: any line is a record or is refused,
/// and a record's fields read (by path, as the filter, the formats and HAR export do) without
/// trapping; a record renders in every output format (HAR, CSV, curl, the table...).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogRecord(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, _) = pieces(data, size)
    all.withUnsafeBufferPointer { line in
        guard let record = LogRecord(line) else { return }
        _ = record.string("url")
        _ = record.number("timings_ms", "total")
        _ = record.bool("cache", "stored")
        _ = record.stringMembers("request_headers")
        _ = record.span(["upstream", "tls", "trust"])
        for format in LogFormat.allCases { _ = format.render(record, index: 0) }
    }
    return 0
}
