import HTTPTypes
import LookoutCache
import LookoutHTTP

/// The field grammars the cache and the proxy read from origins: Cache-Control, CDN-Cache-Control
/// (a Structured Field Dictionary), HTTP-dates, Range, Content-Range, Age and Expires.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCacheFields(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, _) = pieces(data, size)
    let text = String(decoding: all, as: UTF8.self)
    let directives = CacheControl(value: text)
    _ = directives.isEmpty
    _ = StructuredFieldDictionary.parse([text])
    if let seconds = HTTPDate.unixSeconds(text) {
        // Whatever was accepted formats back to a date that reads as the same instant.
        let again = HTTPDate.format(unixSeconds: Int64(seconds))
        require(HTTPDate.unixSeconds(again) == seconds.rounded(.down), "\(text) → \(again)")
    }
    _ = ByteRanges.evaluate(text, length: Int64(all.count) * 7)
    if let range = ContentRange(text) {
        require(range.first <= range.last, "\(text)")
        require(range.completeLength.map { range.last < $0 } ?? true, "\(text)")
    }
    var fields = HTTPFields()
    if let value = HTTPField.Name("CDN-Cache-Control") { fields[value] = text }
    fields[.expires] = text
    fields[.age] = text
    fields[.date] = text
    let targeted = CacheControl.response(fields, targeted: true)
    _ = Freshness.lifetime(status: 200, fields: fields, directives: targeted, responseTime: 1_700_000_000, defaultTTL: 0)
    _ = Freshness.ageValue(fields)
    return 0
}
