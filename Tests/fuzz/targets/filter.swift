import LookoutLogQuery

/// The filter language of `lookout log`, `/events`, `/exchanges` and the UI: any text parses or
/// is refused with a column, and what parses evaluates against a record without trapping.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFilter(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, _) = pieces(data, size)
    let text = String(decoding: all, as: UTF8.self)
    do {
        let filter = try LogFilter.parse(text)
        let record = #"{"v":1,"event":"exchange","id":7,"conn":3,"method":"GET","url":"http://a.example/x?y=1","status":503,"timings_ms":{"total":12.5,"wait":3},"kind":"http"}"#
        let bytes = Array(record.utf8)
        let matched: Bool? = bytes.withUnsafeBufferPointer { LogRecord($0).map { filter.matches($0) } }
        require(matched != nil, "the sample record did not read")
    } catch {
        _ = error.description
    }
    return 0
}
