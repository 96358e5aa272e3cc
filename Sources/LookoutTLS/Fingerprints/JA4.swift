/// JA4, FoxIO's TLS client fingerprint (technical_details/JA4.md in FoxIO-LLC/ja4):
/// `a_b_c`, where `a` is the protocol (`t` for TLS over TCP), the highest TLS version offered,
/// `d`/`i` for an SNI or none, the counts of cipher suites and extensions (two digits each), and
/// the first and last characters of the first ALPN value; `b` the first 12 hex digits of the
/// SHA-256 of the sorted cipher suites; `c` the same of the sorted extensions (SNI and ALPN left
/// out), `_`, and the signature algorithms in the order sent. GREASE values are ignored throughout.
public enum JA4 {
    public static func fingerprint(_ hello: ClientHello) -> String {
        let raw = JA4.raw(hello)
        let b = raw.ciphers.isEmpty ? "000000000000" : hash(raw.ciphers.joined(separator: ","))
        var c = "000000000000"
        if !raw.extensions.isEmpty {
            var text = raw.extensions.joined(separator: ",")
            if !raw.signatureAlgorithms.isEmpty { text += "_" + raw.signatureAlgorithms.joined(separator: ",") }
            c = hash(text)
        }
        return "\(raw.a)_\(b)_\(c)"
    }

    /// The parts before hashing (FoxIO's `ja4_r`): `a`, and the sorted hex lists.
    public static func raw(_ hello: ClientHello) -> (a: String, ciphers: [String], extensions: [String], signatureAlgorithms: [String]) {
        let ciphers = hello.cipherSuites.filter { !ClientHello.isGREASE($0) }
        let extensions = hello.extensions.filter { !ClientHello.isGREASE($0) }
        let versions = hello.supportedVersions.filter { !ClientHello.isGREASE($0) }
        let a = "t" + versionText(versions.max() ?? hello.legacyVersion) + (extensions.contains(0x0000) ? "d" : "i") + twoDigits(ciphers.count) + twoDigits(extensions.count)
            + alpnCharacters(hello.alpn.first)
        return (a, ciphers.map(hex4).sorted(), extensions.filter { $0 != 0x0000 && $0 != 0x0010 }.map(hex4).sorted(),
                hello.signatureAlgorithms.filter { !ClientHello.isGREASE($0) }.map(hex4))
    }

    /// A TLS version as JA4 and JA4S write it.
    static func versionText(_ version: UInt16) -> String {
        switch version {
        case 0x0304: "13"
        case 0x0303: "12"
        case 0x0302: "11"
        case 0x0301: "10"
        case 0x0300: "s3"
        default: "00"
        }
    }

    private static func twoDigits(_ count: Int) -> String {
        let value = min(count, 99)
        return value < 10 ? "0\(value)" : String(value)
    }

    /// The first and last characters of the first ALPN value; `00` with none; the first and last
    /// hex digits of its bytes when either character is not alphanumeric ASCII.
    private static func alpnCharacters(_ value: String?) -> String {
        guard let value, let first = value.utf8.first, let last = value.utf8.last else { return "00" }
        func isAlphanumeric(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
        }
        if isAlphanumeric(first) && isAlphanumeric(last) { return String(UnicodeScalar(first)) + String(UnicodeScalar(last)) }
        let hex = value.utf8.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        return String(hex.first!) + String(hex.last!)
    }

    private static func hex4(_ value: UInt16) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    static func hash(_ text: String) -> String {
        SHA256.digest(Array(text.utf8)).prefix(6).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
