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
}

extension HTTP2ErrorCode {
    /// The name RFC 9113 §7 registers, e.g. "CANCEL", or the code in hex.
    public var registeredName: String {
        String(description.split(separator: " ").first ?? Substring(description))
    }
}
