#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An address to listen on: an IPv4 or IPv6 literal and a port.
///
/// Written `"127.0.0.1:8080"` or, for IPv6, `"[::1]:8080"`. The host is kept
/// without brackets (`"::1"`); `"localhost"` is resolved to `"127.0.0.1"`.
/// Port 0 means the kernel picks one. In the config file an entry may also be a mapping,
/// `{address: "127.0.0.1:8081", mode: transparent}`, which names what the listener speaks.
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// What the clients of a listener send.
    public enum Mode: String, Sendable, CaseIterable {
        /// HTTP proxy requests (absolute-form and CONNECT), and the admin pages.
        case proxy
        /// Connections that nftables/iptables REDIRECT or TPROXY sent here: their original
        /// destination says where they go.
        case transparent
        /// SOCKS5 (RFC 1928) clients.
        case socks5
    }

    /// An IPv4 or IPv6 literal, without brackets.
    public var host: String
    /// 0...65535; 0 = the kernel picks.
    public var port: Int
    public var mode: Mode
    /// `tls`: the listener speaks TLS to its clients (a proxy listener only).
    public var tls: TLS?

    /// A listener's own certificate and key, and the authorities whose client certificates
    /// identify clients (`policy.identities[i].client_cert_subject`).
    public struct TLS: Sendable, Hashable {
        public var certificate: String
        public var key: String
        public var clientCA: String?
        public init(certificate: String, key: String, clientCA: String? = nil) {
            self.certificate = certificate
            self.key = key
            self.clientCA = clientCA
        }
    }

    public init(host: String, port: Int, mode: Mode = .proxy, tls: TLS? = nil) {
        self.host = host
        self.port = port
        self.mode = mode
        self.tls = tls
    }

    /// Parses `"host:port"` / `"[v6]:port"` / `"localhost:port"`, as the config
    /// file's `listen` entries and the command line's `--listen` are written.
    public init(parsing text: String) throws(ParseError) {
        let (host, portText): (String, Substring)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw ParseError(message: "missing \"]\" after the IPv6 address in \(quoted(text))")
            }
            let inside = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else {
                throw ParseError(message: rest.isEmpty
                    ? "missing port in \(quoted(text)); expected \"[address]:port\""
                    : "expected \":port\" after \"]\" in \(quoted(text))")
            }
            guard Self.isIPv6Literal(inside) else {
                throw ParseError(message: "\(quoted(inside)) is not an IPv6 address")
            }
            host = inside
            portText = rest.dropFirst()
        } else {
            let colons = text.filter { $0 == ":" }.count
            if colons == 0 {
                throw ParseError(message: "missing port in \(quoted(text)); expected \"host:port\"")
            }
            if colons > 1 {
                throw ParseError(message:
                    "IPv6 addresses must be in brackets with the port after them, e.g. \"[::1]:8080\"; got \(quoted(text))")
            }
            let colon = text.firstIndex(of: ":")!
            let name = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if name.lowercased() == "localhost" {
                host = "127.0.0.1"
            } else if Self.isIPv4Literal(name) {
                host = name
            } else if name.isEmpty {
                throw ParseError(message: "missing host in \(quoted(text)); expected \"host:port\"")
            } else {
                throw ParseError(message:
                    "host \(quoted(name)) must be an IPv4 or IPv6 address or \"localhost\"")
            }
        }
        guard !portText.isEmpty else {
            throw ParseError(message: "missing port in \(quoted(text))")
        }
        guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), portText.count <= 6,
              let port = Int(portText)
        else {
            throw ParseError(message: "port \(quoted(String(portText))) is not a number")
        }
        guard (0...65535).contains(port) else {
            throw ParseError(message: "port \(port) is out of range (0...65535; 0 = the kernel picks)")
        }
        self.init(host: host, port: port)
    }

    /// `"127.0.0.1:8080"`, or `"[::1]:8080"` for IPv6.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// True when `host` is an IPv6 literal.
    public var isIPv6: Bool { host.contains(":") }

    /// Why `ListenAddress(parsing:)` refused its text.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public init(message: String) { self.message = message }
        public var description: String { message }
    }

    /// True when `text` is a dotted-quad IPv4 address (as `inet_pton` reads it).
    public static func isIPv4Literal(_ text: String) -> Bool {
        var address = in_addr()
        return text.withCString { inet_pton(AF_INET, $0, &address) } == 1
    }

    /// True when `text` is an IPv6 address without brackets (as `inet_pton` reads it).
    public static func isIPv6Literal(_ text: String) -> Bool {
        var address = in6_addr()
        return text.withCString { inet_pton(AF_INET6, $0, &address) } == 1
    }
}

/// `text` in double quotes, for messages.
func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\r": out += "\\r"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}
