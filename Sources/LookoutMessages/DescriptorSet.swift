/// A `FileDescriptorSet` as `protoc --descriptor_set_out` writes it (`google/protobuf/descriptor.proto`):
/// checked when the config is read, so a wrong file is named there; the UI reads the names.
public enum DescriptorSet {
    /// Why `bytes` is not a FileDescriptorSet with at least one named file, or nil when it is.
    public static func problem(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty else { return "is empty" }
        var files = 0
        var reader = ProtobufWireReader(bytes[...])
        while !reader.atEnd {
            guard let (number, value) = reader.next() else { return "is not protobuf wire format at byte \(reader.offset)" }
            guard number == 1, case .bytes(let file) = value else {
                return "has field \(number) at the top, where a FileDescriptorSet has only its files (field 1)"
            }
            var inner = ProtobufWireReader(file)
            var named = false
            while !inner.atEnd {
                guard let (field, content) = inner.next() else { return "file \(files + 1) is not a FileDescriptorProto" }
                if field == 1, case .bytes(let name) = content, !name.isEmpty { named = true }
            }
            guard named else { return "file \(files + 1) has no name: not a FileDescriptorProto" }
            files += 1
        }
        return nil
    }
}

/// Reads protobuf wire format (https://protobuf.dev/programming-guides/encoding/) field by field:
/// descriptor sets here, the Collector's partial-success answers in the OpenTelemetry exporter.
public struct ProtobufWireReader {
    public enum Value {
        case number(UInt64)
        case bytes(ArraySlice<UInt8>)
    }

    private let bytes: ArraySlice<UInt8>
    public private(set) var offset: Int

    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    public var atEnd: Bool { offset >= bytes.endIndex }

    /// The next field's number and value; nil when the bytes are not wire format.
    public mutating func next() -> (Int, Value)? {
        guard let key = varint(), key >> 3 > 0 else { return nil }
        switch key & 7 {
        case 0:
            return varint().map { (Int(key >> 3), .number($0)) }
        case 1, 5:
            let size = key & 7 == 1 ? 8 : 4
            guard offset + size <= bytes.endIndex else { return nil }
            offset += size
            return (Int(key >> 3), .number(0))
        case 2:
            guard let length = varint(), length <= UInt64(bytes.endIndex - offset) else { return nil }
            let value = bytes[offset..<(offset + Int(length))]
            offset += Int(length)
            return (Int(key >> 3), .bytes(value))
        default:
            return nil
        }
    }

    private mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.endIndex, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
