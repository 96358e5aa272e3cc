import LookoutHTTP

/// Protocol Buffers wire format, written (https://protobuf.dev/programming-guides/encoding/):
/// enough for the OTLP messages, whose field numbers are written next to each use from
/// `opentelemetry/proto/**/*.proto`.
///
/// It writes into memory it owns, checking only the capacity: appending to an array checked the
/// array's uniqueness for every byte, a call into the runtime each time, and that was a quarter
/// of a span's encoding. Not copyable, so no two writers ever share that memory.
struct ProtobufWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    private(set) var count = 0

    init(capacity: Int = 256) {
        self.capacity = max(16, capacity)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// A copy of what was written.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// What was written, in place, for `body` only.
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Room for `more` bytes after `count`.
    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(to: count + more) }
    }

    private mutating func grow(to needed: Int) {
        let larger = max(needed, capacity * 2)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.initialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    private mutating func put(_ buffer: UnsafeRawBufferPointer) {
        let length = buffer.count
        guard length > 0 else { return }
        reserve(length)
        Self.copy(buffer.baseAddress!, length, to: UnsafeMutableRawPointer(base + count))
        count += length
    }

    @inline(__always)
    private static func copy(_ from: UnsafeRawPointer, _ length: Int, to: UnsafeMutableRawPointer) {
        if length >= 8 && length <= 32 {
            // Most attribute keys and values: overlapping word moves instead of a call to
            // memmove, which costs more than the copy at this size.
            to.storeBytes(of: from.loadUnaligned(as: UInt64.self), as: UInt64.self)
            if length > 16 {
                (to + 8).storeBytes(of: (from + 8).loadUnaligned(as: UInt64.self), as: UInt64.self)
                (to + length - 16).storeBytes(of: (from + length - 16).loadUnaligned(as: UInt64.self), as: UInt64.self)
            }
            (to + length - 8).storeBytes(of: (from + length - 8).loadUnaligned(as: UInt64.self), as: UInt64.self)
        } else if length >= 4 && length < 8 {
            to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
            (to + length - 4).storeBytes(of: (from + length - 4).loadUnaligned(as: UInt32.self), as: UInt32.self)
        } else if length > 0 {
            to.copyMemory(from: from, byteCount: length)
        }
    }

    /// Most varints written are tags and short lengths, one byte each: that case is inlined.
    @inline(__always)
    mutating func varint(_ value: UInt64) {
        if value < 0x80 {
            put(UInt8(truncatingIfNeeded: value))
        } else {
            longVarint(value)
        }
    }

    private mutating func longVarint(_ value: UInt64) {
        reserve(10)
        var value = value
        while value >= 0x80 {
            base[count] = UInt8(truncatingIfNeeded: value) | 0x80
            count += 1
            value >>= 7
        }
        base[count] = UInt8(value)
        count += 1
    }

    /// A fixed-width little-endian value, stored in place (no copy call for eight bytes).
    @inline(__always)
    private mutating func putWord<Word: FixedWidthInteger>(_ value: Word) {
        reserve(MemoryLayout<Word>.size)
        UnsafeMutableRawPointer(base + count).storeBytes(of: value, as: Word.self)
        count += MemoryLayout<Word>.size
    }

    @inline(__always)
    private mutating func tag(_ field: Int, _ wire: UInt64) { varint(UInt64(field) << 3 | wire) }

    /// A varint field (uint32, uint64, int64, bool, enum); zero is left out, as proto3 does.
    mutating func number(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, 0)
        varint(value)
    }

    mutating func fixed64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, 1)
        putWord(value.littleEndian)
    }

    mutating func fixed32(_ field: Int, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, 5)
        putWord(value.littleEndian)
    }

    mutating func double(_ field: Int, _ value: Double) {
        tag(field, 1)
        putWord(value.bitPattern.littleEndian)
    }

    /// A string field, its UTF-8 copied straight in (no array on the way).
    mutating func string(_ field: Int, _ value: String) {
        let count = value.utf8.count
        guard count > 0 else { return }
        tag(field, 2)
        varint(UInt64(count))
        appendUTF8(value)
    }

    /// A string field from bytes that are UTF-8 already (protobuf requires it of `string`).
    mutating func string(_ field: Int, utf8 value: [UInt8]) {
        guard !value.isEmpty else { return }
        tag(field, 2)
        varint(UInt64(value.count))
        value.withUnsafeBytes { put($0) }
    }

    private mutating func appendUTF8(_ value: String) {
        value.withUTF8InPlace { put(UnsafeRawBufferPointer($0)) }
    }

    /// A nested message, written by `body` in place: one length byte is set aside, and the
    /// content moved up only when its length needs more (128 bytes or over) — no buffer per
    /// nested message. An empty one is still written: it may be meaningful.
    @inline(__always)
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        let lengthAt = open(field)
        body(&self)
        close(lengthAt)
    }

    /// Begins a nested message written by separate calls (`message` in two halves): returns
    /// where its length goes, for `close`.
    @inline(__always)
    mutating func open(_ field: Int) -> Int {
        tag(field, 2)
        put(0)
        return count - 1
    }

    /// Ends the message `open` began: its length is set, the content moved up only when the
    /// length needs more than one byte.
    @inline(__always)
    mutating func close(_ lengthAt: Int) {
        let length = count - lengthAt - 1
        if length < 0x80 {
            base[lengthAt] = UInt8(length)
        } else {
            closeLong(lengthAt, length)
        }
    }

    private mutating func closeLong(_ lengthAt: Int, _ length: Int) {
        // The varint's extra bytes are made room for at the end and the content moved up into
        // them in place.
        var extra = 0
        var rest = UInt64(length) >> 7
        while rest > 0 {
            extra += 1
            rest >>= 7
        }
        reserve(extra)
        (base + lengthAt + 1 + extra).update(from: base + lengthAt + 1, count: length)
        count += extra
        var value = UInt64(length)
        var at = lengthAt
        while value >= 0x80 {
            base[at] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            at += 1
        }
        base[at] = UInt8(value)
    }

    /// A trace or span id (`bytes`, big-endian as W3C writes them): 16 bytes from two words, or 8.
    mutating func id(_ field: Int, high: UInt64? = nil, _ low: UInt64) {
        tag(field, 2)
        put(high == nil ? 8 : 16)
        if let high { putWord(high.bigEndian) }
        putWord(low.bigEndian)
    }

    /// The tag and length of a length-delimited field whose content follows separately.
    mutating func lengthPrefix(_ field: Int, _ length: Int) {
        tag(field, 2)
        varint(UInt64(length))
    }

    /// Bytes already encoded (fields of the message being written), copied in.
    mutating func append(encoded: [UInt8]) { encoded.withUnsafeBytes { put($0) } }

    /// Empties the writer, keeping its storage for the next message.
    mutating func removeAll() { count = 0 }

    /// An attribute (`KeyValue`, as field `field`) with a string value, in one pass when every
    /// length in it fits one byte (most attributes): `KeyValue { key (1), value (2): AnyValue {
    /// string_value (1) } }`, whose lengths are all known before a byte is written, so none is
    /// set aside and filled in later. False, with nothing written, otherwise.
    @inline(__always)
    mutating func shortKeyValue(_ field: Int, _ key: String, string value: String) -> Bool {
        key.withUTF8InPlace { key in
            value.withUTF8InPlace { value in
                guard let content = shortKeyValueHead(field, key, anyValue: 2 + value.count) else { return false }
                content[0] = 0x0A                                            // AnyValue.string_value
                content[1] = UInt8(value.count)
                if let bytes = value.baseAddress { Self.copy(UnsafeRawPointer(bytes), value.count, to: content + 2) }
                return true
            }
        }
    }

    /// An attribute with an integer value, in one pass as `shortKeyValue(_:_:string:)` is:
    /// `KeyValue { key (1), value (2): AnyValue { int_value (3) } }`.
    @inline(__always)
    mutating func shortKeyValue(_ field: Int, _ key: String, int value: Int64) -> Bool {
        let number = UInt64(bitPattern: value)
        var digits = 1
        var rest = number >> 7
        while rest > 0 {
            digits += 1
            rest >>= 7
        }
        return key.withUTF8InPlace { key in
            guard var next = shortKeyValueHead(field, key, anyValue: 1 + digits) else { return false }
            next[0] = 0x18                                                   // AnyValue.int_value
            next += 1
            var remaining = number
            while remaining >= 0x80 {
                next.pointee = UInt8(truncatingIfNeeded: remaining) | 0x80
                next += 1
                remaining >>= 7
            }
            next.pointee = UInt8(remaining)
            return true
        }
    }

    /// A short attribute's tag, length and key, and its value's tag and length: where the
    /// `anyValue` bytes of the AnyValue go (already counted), or nil when a length would not fit
    /// one byte.
    @inline(__always)
    private mutating func shortKeyValueHead(_ field: Int, _ key: UnsafeBufferPointer<UInt8>, anyValue: Int) -> UnsafeMutablePointer<UInt8>? {
        let keyValue = 2 + key.count + 2 + anyValue
        guard field < 16, !key.isEmpty, keyValue < 0x80 else { return nil }
        reserve(2 + keyValue)
        let at = base + count
        at[0] = UInt8(field << 3 | 2)
        at[1] = UInt8(keyValue)
        at[2] = 0x0A                                                         // KeyValue.key
        at[3] = UInt8(key.count)
        Self.copy(UnsafeRawPointer(key.baseAddress!), key.count, to: at + 4)
        let value = at + 4 + key.count
        value[0] = 0x12                                                      // KeyValue.value
        value[1] = UInt8(anyValue)
        count += 2 + keyValue
        return value + 2
    }

    /// A varint field written even when zero (a oneof member).
    mutating func present(_ field: Int, varint value: UInt64) {
        tag(field, 0)
        varint(value)
    }

    /// A string field written even when empty (a oneof member).
    mutating func present(_ field: Int, text: String) {
        tag(field, 2)
        varint(UInt64(text.utf8.count))
        appendUTF8(text)
    }
}
