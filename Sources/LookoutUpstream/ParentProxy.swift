import LookoutTLS
import LookoutModel

/// A parent (upstream) proxy from `upstream_proxies`: plain requests go to it in absolute form,
/// https and tunnels through a CONNECT to it (RFC 9110 §9.3.6), then TLS to the origin inside.
///
/// A SOCKS5 parent (RFC 1928) carries every connection, plain ones too, through its `CONNECT`:
/// requests then go in origin form, as to the origin itself.
public struct ParentProxy: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        case http
        /// Lookout resolves the origin's name and asks for the address.
        case socks5
        /// The parent resolves the name.
        case socks5h
    }

    public let host: String
    public let port: Int
    public let kind: Kind
    /// `Basic …` from the URL's user:password, sent as `Proxy-Authorization` (RFC 9110 §11.7.2).
    public let authorization: String?
    /// A SOCKS5 parent's username and password (RFC 1929).
    public let socksCredentials: SocksCredentials?

    public struct SocksCredentials: Hashable, Sendable {
        public let user: String
        public let password: String
    }

    public init(host: String, port: Int, user: String? = nil, password: String? = nil, kind: Kind = .http) {
        self.host = host
        self.port = port
        self.kind = kind
        if let user, kind == .http {
            let credentials = Array("\(user):\(password ?? "")".utf8)
            authorization = "Basic " + Base64.encode(credentials)
        } else {
            authorization = nil
        }
        socksCredentials = kind == .http ? nil : user.map { SocksCredentials(user: $0, password: password ?? "") }
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        description = "\(kind.rawValue)://\(name):\(port)"
    }

    /// Requests for plain origins go to it in absolute form (an HTTP parent), not through a tunnel.
    public var forwardsPlainRequests: Bool { kind == .http }

    /// "http://host:port" — never the credentials (this is what the log shows). Formed once:
    /// every exchange through the parent names it.
    public let description: String
}
