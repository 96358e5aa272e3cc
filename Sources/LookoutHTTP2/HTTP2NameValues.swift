import CLookoutNGHTTP2

/// nghttp2's name/value arrays.
enum HTTP2NameValues {
    /// Calls `body` with nghttp2's name/value array for `leading` (a response's `:status`, which
    /// RFC 9113 §8.3 puts before the regular fields) followed by `headers`; nghttp2 copies them on
    /// submit. The bytes and the array are temporary allocations — on the stack for a usual
    /// header section — instead of three arrays per section on the heap, and `leading` spares
    /// the caller an array of its own to put in front (two allocations per response).
    static func with<R>(_ headers: [HTTP2Header], leading: HTTP2Header? = nil,
                        _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        var byteCount = leading.map { $0.name.utf8.count + $0.value.utf8.count } ?? 0
        for header in headers { byteCount += header.name.utf8.count + header.value.utf8.count }
        let count = headers.count + (leading == nil ? 0 : 1)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, byteCount)) { storage in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, count)) { nva in
                // A static helper with an `inout` offset: a nested function capturing a mutable
                // local made Swift box that local on the heap, one allocation per call.
                var offset = 0
                var index = 0
                if let leading {
                    nva.initializeElement(at: 0, to: nameValue(leading, in: storage, at: &offset))
                    index = 1
                }
                for header in headers {
                    nva.initializeElement(at: index, to: nameValue(header, in: storage, at: &offset))
                    index += 1
                }
                return body(UnsafePointer(nva.baseAddress!), count)
            }
        }
    }

    /// `header` copied into `storage` at `offset` (moved past it), as nghttp2's name/value pair.
    private static func nameValue(_ header: HTTP2Header, in storage: UnsafeMutableBufferPointer<UInt8>,
                                  at offset: inout Int) -> nghttp2_nv {
        let (name, nameLength) = place(header.name, in: storage, at: &offset)
        let (value, valueLength) = place(header.value, in: storage, at: &offset)
        return nghttp2_nv(name: name, value: value, namelen: nameLength, valuelen: valueLength,
                          flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
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
