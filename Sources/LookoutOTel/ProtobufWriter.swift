/// Protocol Buffers wire format, written (https://protobuf.dev/programming-guides/encoding/):
/// enough for the OTLP messages, whose field numbers are written next to each use from
/// `opentelemetry/proto/**/*.proto`.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

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
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    mutating func fixed32(_ field: Int, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, 5)
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    mutating func double(_ field: Int, _ value: Double) {
        tag(field, 1)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes += $0 }
    }

    /// A string field, its UTF-8 copied straight in (no array on the way).
    mutating func string(_ field: Int, _ value: String) {
        let count = value.utf8.count
        guard count > 0 else { return }
        tag(field, 2)
        varint(UInt64(count))
        appendUTF8(value)
    }

    /// `String.UTF8View` has no contiguous storage for a small string (15 bytes or fewer, most
    /// attribute values), and appending it then goes byte by byte; `withUTF8` hands over a
    /// buffer in every case.
    private mutating func appendUTF8(_ value: String) {
        var value = value
        value.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A nested message, written by `body` in place: one length byte is set aside, and the
    /// content moved up only when its length needs more (128 bytes or over) — no buffer per
    /// nested message. An empty one is still written: it may be meaningful.
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        let lengthAt = open(field)
        body(&self)
        close(lengthAt)
    }

    /// Begins a nested message written by separate calls (`message` in two halves): returns
    /// where its length goes, for `close`.
    mutating func open(_ field: Int) -> Int {
        tag(field, 2)
        bytes.append(0)
        return bytes.count - 1
    }

    /// Ends the message `open` began: its length is set, the content moved up only when the
    /// length needs more than one byte.
    mutating func close(_ lengthAt: Int) {
        let length = bytes.count - lengthAt - 1
        if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
            return
        }
        // The varint's extra bytes are made room for at the end and the content moved up into
        // it in place: no array for the prefix.
        var extra = 0
        var rest = UInt64(length) >> 7
        while rest > 0 {
            extra += 1
            rest >>= 7
        }
        bytes.append(contentsOf: repeatElement(0, count: extra))
        bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            (base + lengthAt + 1 + extra).update(from: base + lengthAt + 1, count: length)
            var value = UInt64(length)
            var at = lengthAt
            while value >= 0x80 {
                base[at] = UInt8(truncatingIfNeeded: value) | 0x80
                value >>= 7
                at += 1
            }
            base[at] = UInt8(value)
        }
    }

    /// A trace or span id (`bytes`, big-endian as W3C writes them): 16 bytes from two words, or 8.
    mutating func id(_ field: Int, high: UInt64? = nil, _ low: UInt64) {
        tag(field, 2)
        bytes.append(high == nil ? 8 : 16)
        if let high { withUnsafeBytes(of: high.bigEndian) { bytes += $0 } }
        withUnsafeBytes(of: low.bigEndian) { bytes += $0 }
    }

    /// The tag and length of a length-delimited field whose content follows separately.
    mutating func lengthPrefix(_ field: Int, _ length: Int) {
        tag(field, 2)
        varint(UInt64(length))
    }

    /// Bytes already encoded (fields of the message being written), copied in.
    mutating func append(encoded: some Collection<UInt8>) { bytes.append(contentsOf: encoded) }

    /// Empties the writer, keeping its storage for the next message.
    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

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
