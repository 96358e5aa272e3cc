#if canImport(Glibc)
import Glibc
#endif

/// An address range ("10.0.0.0/8", "::1/128", a lone address) or a named set of them, matched
/// against socket addresses for access control.
///
/// Every address is compared in IPv6 form, IPv4 ones as IPv4-mapped (`::ffff:a.b.c.d`, RFC 4291
/// §2.5.5.2). So `[::ffff:127.0.0.1]` falls in 127.0.0.0/8 like 127.0.0.1 does, and a range
/// cannot be stepped around by writing the same address the other way.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    private let high: UInt64
    private let low: UInt64
    /// The prefix length in the IPv6 form (an IPv4 /8 is /104 here).
    private let prefixLength: Int
    /// As written (or the name of the set it came from).
    public let description: String

    /// Parses "ADDRESS/PREFIX" or a lone address (a /32 or /128). Host bits must be zero.
    public init?(cidr text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let (high, low, isV4) = IPNetwork.parse(String(parts[0])) else { return nil }
        var length = isV4 ? 32 : 128
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(parts[1]), n <= length else { return nil }
            length = n
        }
        let prefix = isV4 ? length + 96 : length
        let (maskHigh, maskLow) = IPNetwork.mask(prefix)
        guard high & ~maskHigh == 0, low & ~maskLow == 0 else { return nil }
        self.init(high: high, low: low, prefixLength: prefix, description: text)
    }

    private init(high: UInt64, low: UInt64, prefixLength: Int, description: String) {
        self.high = high
        self.low = low
        self.prefixLength = prefixLength
        self.description = description
    }

    /// The named sets: `loopback` (127.0.0.0/8, ::1, and 0.0.0.0/8 and ::, which reach this host
    /// on Linux), `private` (RFC 1918 and fc00::/7), `link-local` (169.254.0.0/16 and fe80::/10)
    /// and `multicast` (224.0.0.0/4 and ff00::/8).
    public static func named(_ name: String) -> [IPNetwork]? {
        let ranges: [String]
        switch name {
        case "loopback": ranges = ["127.0.0.0/8", "::1/128", "0.0.0.0/8", "::/128"]
        case "private": ranges = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"]
        case "link-local": ranges = ["169.254.0.0/16", "fe80::/10"]
        case "multicast": ranges = ["224.0.0.0/4", "ff00::/8"]
        default: return nil
        }
        return ranges.map { range in
            let network = IPNetwork(cidr: range)!
            return IPNetwork(high: network.high, low: network.low, prefixLength: network.prefixLength, description: name)
        }
    }

    /// The names `named(_:)` knows.
    public static let names = ["loopback", "private", "link-local", "multicast"]

    /// A CIDR or one of the names, as a list of networks.
    public static func parseList(entry: String) -> [IPNetwork]? {
        named(entry) ?? IPNetwork(cidr: entry).map { [$0] }
    }

    /// Whether every address of this range lies in `other`.
    public func isWithin(_ other: IPNetwork) -> Bool {
        guard prefixLength >= other.prefixLength else { return false }
        let (maskHigh, maskLow) = IPNetwork.mask(other.prefixLength)
        return high & maskHigh == other.high && low & maskLow == other.low
    }

    public func contains(_ address: SocketAddress) -> Bool {
        guard let (high, low) = IPNetwork.bits(of: address) else { return false }
        let (maskHigh, maskLow) = IPNetwork.mask(prefixLength)
        return high & maskHigh == self.high && low & maskLow == self.low
    }

    // MARK: - Bits

    private static func mask(_ prefix: Int) -> (UInt64, UInt64) {
        let high: UInt64 = prefix >= 64 ? .max : (prefix == 0 ? 0 : ~0 << (64 - prefix))
        let low: UInt64 = prefix <= 64 ? 0 : (prefix == 128 ? .max : ~0 << (128 - prefix))
        return (high, low)
    }

    /// The 128 bits of an address written in dotted-quad or IPv6 form (IPv4 mapped).
    private static func parse(_ text: String) -> (UInt64, UInt64, isV4: Bool)? {
        var v4 = in_addr()
        var v6 = in6_addr()
        // inet_pton, unlike inet_aton, takes only the dotted-quad form for IPv4.
        if inet_pton(AF_INET, text, &v4) == 1 {
            return (0, 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: v4.s_addr)), true)
        }
        if inet_pton(AF_INET6, text, &v6) == 1 {
            let (high, low) = bits(v6)
            return (high, low, false)
        }
        return nil
    }

    private static func bits(_ v6: in6_addr) -> (UInt64, UInt64) {
        var copy = v6
        return withUnsafeBytes(of: &copy) { raw in
            var high: UInt64 = 0
            var low: UInt64 = 0
            for i in 0..<8 { high = high << 8 | UInt64(raw[i]) }
            for i in 8..<16 { low = low << 8 | UInt64(raw[i]) }
            return (high, low)
        }
    }

    private static func bits(of address: SocketAddress) -> (UInt64, UInt64)? {
        switch address.family {
        case AF_INET:
            let v4 = withUnsafeBytes(of: address.raw) { $0.load(as: sockaddr_in.self) }
            return (0, 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: v4.sin_addr.s_addr)))
        case AF_INET6:
            return bits(address.raw.sin6_addr)
        default:
            return nil
        }
    }
}
