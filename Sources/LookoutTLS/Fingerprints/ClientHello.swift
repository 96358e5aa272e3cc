/// The fields of a TLS ClientHello (RFC 8446 §4.1.2) that fingerprints read, parsed from the
/// first TLS record a client sends — as it passes a blind tunnel, or before an interception's
/// handshake — without terminating anything.
public struct ClientHello: Sendable, Equatable {
    /// `legacy_version` (0x0303 for TLS 1.2 and 1.3).
    public var legacyVersion: UInt16
    public var cipherSuites: [UInt16]
    /// Extension types in the order sent.
    public var extensions: [UInt16]
    public var serverName: String?
    /// `application_layer_protocol_negotiation` values in order.
    public var alpn: [String]
    /// `supported_versions` values.
    public var supportedVersions: [UInt16]
    /// `signature_algorithms` values in order.
    public var signatureAlgorithms: [UInt16]

    /// A value reserved by GREASE (RFC 8701): 0x0A0A, 0x1A1A, … 0xFAFA.
    public static func isGREASE(_ value: UInt16) -> Bool { value & 0x0F0F == 0x0A0A && value >> 8 == value & 0xFF }

    /// Parses `record`: a TLS handshake record whose ClientHello is whole in it. Nil for anything
    /// else (not a handshake, not a ClientHello, cut short, malformed).
    public init?(record: [UInt8]) {
        var r = ByteReader(record[...])
        guard r.u8() == 0x16, r.u16() != nil, let recordLength = r.u16(), let body = r.take(Int(recordLength)) else { return nil }
        var h = ByteReader(body)
        guard h.u8() == 0x01, let length = h.u24(), let hello = h.take(Int(length)) else { return nil }
        var c = ByteReader(hello)
        guard let version = c.u16(), c.take(32) != nil, let sessionLength = c.u8(), c.take(Int(sessionLength)) != nil,
              let suitesLength = c.u16(), let suites = c.take(Int(suitesLength)), let compressionLength = c.u8(),
              c.take(Int(compressionLength)) != nil else { return nil }
        legacyVersion = version
        cipherSuites = Self.u16List(suites) ?? []
        extensions = []
        alpn = []
        supportedVersions = []
        signatureAlgorithms = []
        guard !c.atEnd else { return }
        guard let extensionsLength = c.u16(), let all = c.take(Int(extensionsLength)) else { return nil }
        var e = ByteReader(all)
        while !e.atEnd {
            guard let type = e.u16(), let dataLength = e.u16(), let data = e.take(Int(dataLength)) else { return nil }
            extensions.append(type)
            var d = ByteReader(data)
            switch type {
            case 0x0000:  // server_name (RFC 6066 §3)
                if d.u16() != nil, d.u8() == 0, let nameLength = d.u16(), let name = d.take(Int(nameLength)) {
                    serverName = String(decoding: name, as: UTF8.self)
                }
            case 0x0010:  // ALPN (RFC 7301 §3.1)
                if let listLength = d.u16(), let list = d.take(Int(listLength)) {
                    var p = ByteReader(list)
                    while let nameLength = p.u8(), let name = p.take(Int(nameLength)) { alpn.append(String(decoding: name, as: UTF8.self)) }
                }
            case 0x002b:  // supported_versions (RFC 8446 §4.2.1)
                if let listLength = d.u8(), let list = d.take(Int(listLength)) { supportedVersions = Self.u16List(list) ?? [] }
            case 0x000d:  // signature_algorithms (RFC 8446 §4.2.3)
                if let listLength = d.u16(), let list = d.take(Int(listLength)) { signatureAlgorithms = Self.u16List(list) ?? [] }
            default:
                break
            }
        }
    }

    private static func u16List(_ bytes: ArraySlice<UInt8>) -> [UInt16]? {
        guard bytes.count % 2 == 0 else { return nil }
        return stride(from: bytes.startIndex, to: bytes.endIndex, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
    }

    /// How long the first record is (header included), once its header is there: how many bytes
    /// to gather before parsing. Nil when the bytes do not start a handshake record.
    public static func recordLength(_ prefix: [UInt8]) -> Int? {
        guard let first = prefix.first, first == 0x16 else { return nil }
        guard prefix.count >= 5 else { return 0 }
        return 5 + (Int(prefix[3]) << 8 | Int(prefix[4]))
    }
}

/// Reads big-endian integers and slices, failing instead of trapping at the end.
struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private var offset: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    var atEnd: Bool { offset >= bytes.endIndex }

    mutating func u8() -> UInt8? {
        guard offset < bytes.endIndex else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() -> UInt16? {
        guard let a = u8(), let b = u8() else { return nil }
        return UInt16(a) << 8 | UInt16(b)
    }

    mutating func u24() -> UInt32? {
        guard let a = u8(), let b = u16() else { return nil }
        return UInt32(a) << 16 | UInt32(b)
    }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, count <= bytes.endIndex - offset else { return nil }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }
}
