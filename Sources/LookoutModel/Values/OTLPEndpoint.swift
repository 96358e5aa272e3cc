/// An OTLP/HTTP base URL taken apart: `http[s]://HOST[:PORT][/PATH]` (port 4318 by default, the
/// OTLP specification's), with the signal's path appended to `PATH`.
public struct OTLPEndpoint: Sendable, Equatable {
    public var isSecure: Bool
    public var host: String
    public var port: Int
    public var basePath: String

    public init?(_ url: String) {
        let isSecure = url.hasPrefix("https://")
        guard isSecure || url.hasPrefix("http://") else { return nil }
        let rest = url.dropFirst(isSecure ? "https://".count : "http://".count)
        let authority = rest.prefix { $0 != "/" }
        var path = String(rest.dropFirst(authority.count))
        while path.hasSuffix("/") { path.removeLast() }
        var host = Substring(authority)
        var port = 4318
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { guard let value = Int(after.dropFirst()) else { return nil }; port = value }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            guard let value = Int(authority[authority.index(after: colon)...]) else { return nil }
            port = value
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.isSecure = isSecure
        self.host = String(host)
        self.port = port
        self.basePath = path
    }

    /// `/v1/traces` or `/v1/logs` under the base path.
    public func path(for signal: String) -> String { basePath + "/v1/" + signal }
}
