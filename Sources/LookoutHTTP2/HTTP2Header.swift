import Glibc
import HTTPTypes

/// One header field as it crossed an HTTP/2 connection: names are lowercase (RFC 9113 §8.2.1,
/// which nghttp2 enforces on receipt), pseudo-header fields start with ":".
public struct HTTP2Header: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    public var isPseudo: Bool { name.utf8.first == UInt8(ascii: ":") }

    /// Whether this field's name and value are exactly these bytes.
    func hasBytes(name: UnsafePointer<UInt8>, nameLength: Int, value: UnsafePointer<UInt8>, valueLength: Int) -> Bool {
        Self.string(self.name, equals: name, count: nameLength) && Self.string(self.value, equals: value, count: valueLength)
    }

    /// Read in place: `withUTF8` is mutating, so calling it meant a copy of the string (a retain
    /// and a release per field of every section received). A string without contiguous UTF-8
    /// (none that Lookout makes) counts as different, so the field just gets strings of its own.
    private static func string(_ string: String, equals bytes: UnsafePointer<UInt8>, count: Int) -> Bool {
        guard string.utf8.count == count else { return false }
        return string.utf8.withContiguousStorageIfAvailable { stored in
            count == 0 || memcmp(stored.baseAddress!, bytes, count) == 0
        } ?? false
    }
}

extension HTTP2ErrorCode {
    /// The name RFC 9113 §7 registers, e.g. "CANCEL", or the code in hex.
    public var registeredName: String {
        String(description.split(separator: " ").first ?? Substring(description))
    }
}
