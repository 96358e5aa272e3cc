import CLookoutNGHTTP2

/// nghttp2's name/value arrays.
enum HTTP2NameValues {
    /// Calls `body` with nghttp2's name/value array for `headers` (nghttp2 copies them on submit).
    static func with<R>(_ headers: [HTTP2Header], _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        var storage: [UInt8] = []
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        spans.reserveCapacity(headers.count)
        for header in headers {
            let nameStart = storage.count
            storage.append(contentsOf: header.name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: header.value.utf8)
            spans.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        if storage.isEmpty { storage.append(0) }
        return storage.withUnsafeMutableBufferPointer { raw in
            let base = raw.baseAddress!
            let nva = spans.map { span in
                nghttp2_nv(name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                           namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nva.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }

    /// A header field nghttp2 handed to a callback, as a value.
    static func header(name: UnsafePointer<UInt8>, nameLength: Int, value: UnsafePointer<UInt8>, valueLength: Int) -> HTTP2Header {
        HTTP2Header(String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
    }
}
