#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Host-name normalisation and IP-literal detection shared by certificate issuance, trust
/// evaluation and rule matching.
enum HostName {
    /// Lower-cases ASCII, strips IPv6 brackets ("[::1]" → "::1") and one trailing dot
    /// ("example.com." → "example.com", RFC 1034 §3.1 absolute names).
    static func normalize(_ host: String) -> String {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") {
            text = String(text.dropFirst().dropLast())
        }
        if text.hasSuffix("."), text.count > 1 {
            text.removeLast()
        }
        return text.lowercased()
    }

    /// The network-order bytes of an IPv4 (4 bytes) or IPv6 (16 bytes) literal, or nil when
    /// `host` is a name. Brackets are accepted around IPv6.
    static func ipAddressBytes(_ host: String) -> [UInt8]? {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") {
            text = text.dropFirst().dropLast()
        }
        var v4 = in_addr()
        if parse(text, family: AF_INET, into: &v4) {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if parse(text, family: AF_INET6, into: &v6) {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// A dotted-quad IPv4 literal, checked without building its bytes (every proxied request
    /// asks, for its host's rule key).
    static func isIPv4Literal(_ host: String) -> Bool {
        var v4 = in_addr()
        return parse(Substring(host), family: AF_INET, into: &v4)
    }

    /// `inet_pton` on `text`, from a stack buffer: passing a `String` made a C string on the heap
    /// on every call. Text longer than any literal of the family ("255.255.255.255" has 15 bytes,
    /// an IPv6 literal at most 45, `INET6_ADDRSTRLEN` less its NUL) is not one, nor is text with a
    /// NUL inside, which would end the C string early ("1.2.3.4\0x" read as "1.2.3.4").
    private static func parse(_ text: Substring, family: Int32, into address: UnsafeMutableRawPointer) -> Bool {
        let maxLength = family == AF_INET ? 15 : 45
        let length = text.utf8.count
        guard length > 0, length <= maxLength else { return false }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxLength + 1) { buffer in
            _ = buffer.initialize(from: text.utf8)  // the UTF-8 copies out in one move
            buffer[length] = 0
            guard memchr(buffer.baseAddress!, 0, length) == nil else { return false }
            return buffer.withMemoryRebound(to: CChar.self) { inet_pton(family, $0.baseAddress!, address) } == 1
        }
    }

    /// Whether `host` is an IPv4 or IPv6 literal.
    static func isIPAddress(_ host: String) -> Bool {
        ipAddressBytes(host) != nil
    }

    /// The canonical text of a 4- or 16-byte address ("192.0.2.1", "2001:db8::1").
    static func formatIPAddress(_ bytes: [UInt8]) -> String? {
        let family: Int32
        switch bytes.count {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok = bytes.withUnsafeBytes { raw in
            buffer.withUnsafeMutableBufferPointer { out in
                inet_ntop(family, raw.baseAddress, out.baseAddress, socklen_t(out.count)) != nil
            }
        }
        guard ok else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Whether `host` is acceptable as a DNS name in a certificate: 1–253 characters of
    /// letters, digits, '-', '_' and '.', no empty labels, no label over 63 characters
    /// (RFC 1035 §2.3.4). Underscores are tolerated because real hosts use them.
    static func isValidDNSName(_ host: String) -> Bool {
        let bytes = Array(host.utf8)
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        var labelLength = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "."):
                guard labelLength > 0 else { return false }
                labelLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                labelLength += 1
                guard labelLength <= 63 else { return false }
            default:
                return false
            }
        }
        return labelLength > 0
    }
}
