import CLookoutNGHTTP2

/// nghttp2's name/value arrays.
enum HTTP2NameValues {
    /// Calls `body` with nghttp2's name/value array for `headers` (nghttp2 copies them on submit).
    /// The bytes and the array are temporary allocations — on the stack for a usual header
    /// section — instead of three arrays per section on the heap.
    static func with<R>(_ headers: [HTTP2Header], _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        var byteCount = 0
        for header in headers { byteCount += header.name.utf8.count + header.value.utf8.count }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, byteCount)) { storage in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, headers.count)) { nva in
                // A static helper with an `inout` offset: a nested function capturing a mutable
                // local made Swift box that local on the heap, one allocation per call.
                var offset = 0
                for (index, header) in headers.enumerated() {
                    let (name, nameLength) = place(header.name, in: storage, at: &offset)
                    let (value, valueLength) = place(header.value, in: storage, at: &offset)
                    nva.initializeElement(at: index, to: nghttp2_nv(name: name, value: value, namelen: nameLength,
                                                                    valuelen: valueLength,
                                                                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
                }
                return body(UnsafePointer(nva.baseAddress!), headers.count)
            }
        }
    }

    /// Copies `string`'s bytes into `storage` at `offset`, moves `offset` past them, and returns
    /// where they are.
    private static func place(_ string: String, in storage: UnsafeMutableBufferPointer<UInt8>,
                              at offset: inout Int) -> (UnsafeMutablePointer<UInt8>, Int) {
        let start = storage.baseAddress! + offset
        let count = UnsafeMutableBufferPointer(start: start, count: storage.count - offset)
            .initialize(fromContentsOf: string.utf8)
        offset += count
        return (start, count)
    }

    /// A header field nghttp2 handed to a callback, as a value.
    static func header(name: UnsafePointer<UInt8>, nameLength: Int, value: UnsafePointer<UInt8>, valueLength: Int) -> HTTP2Header {
        HTTP2Header(String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
    }
}
