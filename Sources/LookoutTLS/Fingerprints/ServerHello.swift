/// The fields of a TLS ServerHello (RFC 8446 §4.1.3) that JA4S reads, from the first record an
/// origin sends.
public struct ServerHello: Sendable, Equatable {
    public var legacyVersion: UInt16
    public var cipherSuite: UInt16
    /// Extension types in the order sent.
    public var extensions: [UInt16]
    /// `supported_versions`' selected version (TLS 1.3), if sent.
    public var selectedVersion: UInt16?
    public var alpn: String?

    public init?(record: [UInt8]) {
        var r = ByteReader(record[...])
        guard r.u8() == 0x16, r.u16() != nil, let recordLength = r.u16(), let body = r.take(Int(recordLength)) else { return nil }
        var h = ByteReader(body)
        guard h.u8() == 0x02, let length = h.u24(), let hello = h.take(Int(length)) else { return nil }
        var s = ByteReader(hello)
        guard let version = s.u16(), s.take(32) != nil, let sessionLength = s.u8(), s.take(Int(sessionLength)) != nil,
              let suite = s.u16(), s.u8() != nil else { return nil }
        legacyVersion = version
        cipherSuite = suite
        extensions = []
        guard !s.atEnd else { return }
        guard let extensionsLength = s.u16(), let all = s.take(Int(extensionsLength)) else { return nil }
        var e = ByteReader(all)
        while !e.atEnd {
            guard let type = e.u16(), let dataLength = e.u16(), let data = e.take(Int(dataLength)) else { return nil }
            extensions.append(type)
            var d = ByteReader(data)
            if type == 0x002b { selectedVersion = d.u16() }
            if type == 0x0010, d.u16() != nil, let nameLength = d.u8(), let name = d.take(Int(nameLength)) {
                alpn = String(decoding: name, as: UTF8.self)
            }
        }
    }
}

/// JA4S, FoxIO's ServerHello fingerprint (FoxIO-LLC/ja4, the JA4S definition): `t`, the version
/// chosen, the count of extensions and the chosen ALPN's first and last characters; `_` the
/// chosen cipher suite in hex; `_` the first 12 hex digits of the SHA-256 of the extensions in
/// the order sent. GREASE values are ignored.
public enum JA4S {
    public static func fingerprint(_ hello: ServerHello) -> String {
        let extensions = hello.extensions.filter { !ClientHello.isGREASE($0) }
        let versionText = JA4.versionText(hello.selectedVersion ?? hello.legacyVersion)
        let count = min(extensions.count, 99)
        var alpn = "00"
        if let value = hello.alpn, let first = value.first, let last = value.last { alpn = String(first) + String(last) }
        let a = "t" + versionText + (count < 10 ? "0\(count)" : String(count)) + alpn
        let list = extensions.map { value -> String in
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 4 - digits.count) + digits
        }
        let cipher = String(hello.cipherSuite, radix: 16)
        return a + "_" + String(repeating: "0", count: 4 - cipher.count) + cipher + "_" + JA4.hash(list.joined(separator: ","))
    }
}
