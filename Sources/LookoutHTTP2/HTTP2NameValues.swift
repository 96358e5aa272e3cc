import CLookoutNGHTTP2

/// nghttp2's name/value arrays.
enum HTTP2NameValues {
    /// Bytes of names and values a section may take before it is written to the heap instead:
    /// `withUnsafeTemporaryAllocation` uses the stack up to 1 KiB, and a usual section (a
    /// browser's request, an origin's response) is a few hundred bytes.
    static let stackBytes = 1024

    /// Calls `body` with nghttp2's name/value array for the section `write` writes (at most
    /// `maxCount` fields), its field count and its size as RFC 9113 §6.5.2 counts it; nghttp2
    /// copies the fields on submit. Written straight from where the fields are — no array of
    /// them in between — into storage on the stack; a section larger than `stackBytes` is
    /// written a second time into storage of its exact size.
    static func with<R>(maxCount: Int, _ write: (inout HTTP2SectionWriter) -> Void,
                        _ body: (UnsafePointer<nghttp2_nv>, _ count: Int, _ listSize: Int) -> R) -> R {
        withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, maxCount)) { nva in
            let onStack: R? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackBytes) { storage in
                var writer = HTTP2SectionWriter(nva: nva, storage: storage)
                write(&writer)
                return writer.fits ? body(UnsafePointer(nva.baseAddress!), writer.count, writer.listSize) : nil
            }
            if let onStack { return onStack }
            var measured = HTTP2SectionWriter(nva: nva, storage: UnsafeMutableBufferPointer(start: nil, count: 0))
            write(&measured)
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: measured.byteCount) { storage in
                var writer = HTTP2SectionWriter(nva: nva, storage: storage)
                write(&writer)
                return body(UnsafePointer(nva.baseAddress!), writer.count, writer.listSize)
            }
        }
    }

    /// The same for fields already in an array, after `leading` (a response's `:status`, which
    /// §8.3 puts before the regular fields).
    static func with<R>(_ headers: [HTTP2Header], leading: HTTP2Header? = nil,
                        _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        with(maxCount: headers.count + 1) { writer in
            if let leading { writer.append(leading.name, leading.value) }
            for header in headers { writer.append(header.name, header.value) }
        } _: { nva, count, _ in
            body(nva, count)
        }
    }

    /// A header field nghttp2 handed to a callback, as a value.
    static func header(name: UnsafePointer<UInt8>, nameLength: Int, value: UnsafePointer<UInt8>, valueLength: Int) -> HTTP2Header {
        HTTP2Header(String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
    }
}

/// Writes one header section's fields, in order, into nghttp2's name/value array and the storage
/// its names and values point into. Past the storage's end it only counts, so the caller can
/// tell the section did not fit and how much it needs.
struct HTTP2SectionWriter {
    private let nva: UnsafeMutableBufferPointer<nghttp2_nv>
    private let storage: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0
    /// The bytes of the names and values written or counted so far.
    private(set) var byteCount = 0

    init(nva: UnsafeMutableBufferPointer<nghttp2_nv>, storage: UnsafeMutableBufferPointer<UInt8>) {
        self.nva = nva
        self.storage = storage
    }

    /// Every field so far is in the storage.
    var fits: Bool { byteCount <= storage.count }

    /// The section's size as §6.5.2 counts it: name + value + 32 per field.
    var listSize: Int { byteCount + 32 * count }

    mutating func append(_ name: String, _ value: String) {
        precondition(count < nva.count, "more fields than the section was sized for")
        let nameLength = name.utf8.count, valueLength = value.utf8.count
        let start = byteCount
        byteCount += nameLength + valueLength
        count += 1
        guard byteCount <= storage.count else { return }
        let namePointer = storage.baseAddress! + start
        let valuePointer = namePointer + nameLength
        _ = UnsafeMutableBufferPointer(start: namePointer, count: nameLength).initialize(fromContentsOf: name.utf8)
        _ = UnsafeMutableBufferPointer(start: valuePointer, count: valueLength).initialize(fromContentsOf: value.utf8)
        nva.initializeElement(at: count - 1, to: nghttp2_nv(name: namePointer, value: valuePointer, namelen: nameLength,
                                                            valuelen: valueLength,
                                                            flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
    }
}
