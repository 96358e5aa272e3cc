/// Where an upstream request goes: a host and port, and the pool key for its connections.
struct Origin: Hashable, Sendable {
    let host: String
    let port: Int

    /// "host:port", IPv6 in brackets; also the connection-pool key.
    var authority: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
