import LookoutTLS
import LookoutModel

/// A parent (upstream) proxy from `upstream_proxies`: plain requests go to it in absolute form,
/// https and tunnels through a CONNECT to it (RFC 9110 §9.3.6), then TLS to the origin inside.
public struct ParentProxy: Hashable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int
    /// `Basic …` from the URL's user:password, sent as `Proxy-Authorization` (RFC 9110 §11.7.2).
    public let authorization: String?

    public init(host: String, port: Int, user: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        if let user {
            let credentials = Array("\(user):\(password ?? "")".utf8)
            authorization = "Basic " + Base64.encode(credentials)
        } else {
            authorization = nil
        }
        description = host.utf8.contains(UInt8(ascii: ":")) ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }

    /// "http://host:port" — never the credentials (this is what the log shows). Formed once:
    /// every exchange through the parent names it.
    public let description: String
}
