import LookoutTLS
import LookoutModel
import LookoutUpstream

/// One `map.remote[i]`: requests under `from` go to `to` instead, the rest of their path kept.
public struct MapRemoteRule: Sendable {
    public struct Prefix: Sendable {
        public var isSecure: Bool
        public var host: HostPattern
        public var port: Int
        public var path: String
        /// As written in the config.
        public var text: String

        public init(isSecure: Bool, host: HostPattern, port: Int, path: String, text: String) {
            self.isSecure = isSecure
            self.host = host
            self.port = port
            self.path = path
            self.text = text
        }

        /// Whether a request for `host`:`port` over (or not over) TLS with `path` is under this prefix.
        func covers(isSecure: Bool, host: String, port: Int, path: String) -> Bool {
            self.isSecure == isSecure && self.port == port && path.hasPrefix(self.path) && self.host.matches(host)
        }
    }

    public var from: Prefix
    /// The target: one host (no pattern), its port, and the path prefix that replaces `from`'s.
    public var toHost: String
    public var toPort: Int
    public var toIsSecure: Bool
    public var toPath: String
    public var toText: String
    public var preserveHost: Bool
    public var allowDowngrade: Bool

    public init(from: Prefix, toHost: String, toPort: Int, toIsSecure: Bool, toPath: String, toText: String,
                preserveHost: Bool, allowDowngrade: Bool) {
        self.from = from
        self.toHost = toHost
        self.toPort = toPort
        self.toIsSecure = toIsSecure
        self.toPath = toPath
        self.toText = toText
        self.preserveHost = preserveHost
        self.allowDowngrade = allowDowngrade
    }

    /// The target path for `path` (which starts with `from.path`): `to`'s prefix, then the rest,
    /// with exactly the one slash between them that the request had.
    package func targetPath(for path: String) -> String {
        let rest = path.dropFirst(from.path.count)
        var prefix = Substring(toPath)
        if from.path.hasSuffix("/") {
            if !prefix.hasSuffix("/") { return toPath + "/" + rest }
        } else if prefix.hasSuffix("/"), rest.hasPrefix("/") || rest.hasPrefix("?") || rest.isEmpty {
            prefix = prefix.dropLast()
        }
        let joined = prefix + rest
        return joined.isEmpty ? "/" : (joined.hasPrefix("/") ? String(joined) : "/" + joined)
    }
}

/// One `map.local[i]`: a request whose URL, query aside, is `from` is answered from `file`.
public struct MapLocalRule: Sendable {
    public var from: MapRemoteRule.Prefix
    public var file: String
    public var status: Int
    public var contentType: String

    public init(from: MapRemoteRule.Prefix, file: String, status: Int, contentType: String) {
        self.from = from
        self.file = file
        self.status = status
        self.contentType = contentType
    }

    func covers(isSecure: Bool, host: String, port: Int, path: String) -> Bool {
        let query = path.firstIndex(of: "?") ?? path.endIndex
        return from.isSecure == isSecure && from.port == port && path[..<query] == from.path && from.host.matches(host)
    }
}

/// `map`: which rule, if any, takes a request. Map local first (an exact URL), then the map remote
/// rule with the longest `from` path; on a tie the more specific host pattern, then the one listed first.
public struct MapRules: Sendable {
    public enum Match {
        case remote(MapRemoteRule)
        case local(MapLocalRule)
    }

    public var remote: [MapRemoteRule]
    public var local: [MapLocalRule]

    public init(remote: [MapRemoteRule] = [], local: [MapLocalRule] = []) {
        self.remote = remote
        self.local = local
    }

    public var isEmpty: Bool { remote.isEmpty && local.isEmpty }

    /// Rules are few (a handful per project): a scan, only when there are any.
    package func match(isSecure: Bool, host: String, port: Int, path: String) -> Match? {
        var bestLocal: MapLocalRule?
        for rule in local where rule.covers(isSecure: isSecure, host: host, port: port, path: path) {
            if bestLocal.map({ rule.from.host.kind < $0.from.host.kind }) ?? true { bestLocal = rule }
        }
        if let bestLocal { return .local(bestLocal) }
        var best: MapRemoteRule?
        for rule in remote where rule.from.covers(isSecure: isSecure, host: host, port: port, path: path) {
            guard let current = best else {
                best = rule
                continue
            }
            if rule.from.path.count > current.from.path.count
                || (rule.from.path.count == current.from.path.count && rule.from.host.kind < current.from.host.kind) {
                best = rule
            }
        }
        return best.map(Match.remote)
    }

    /// The media type of a map-local file, from its extension (`content_type` overrides it).
    public static func contentType(forFile file: String) -> String {
        let name = file.split(separator: "/").last ?? Substring(file)
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "json": return "application/json"
        case "html", "htm": return "text/html; charset=utf-8"
        case "txt", "text", "log": return "text/plain; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "xml": return "application/xml"
        case "csv": return "text/csv; charset=utf-8"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "ico": return "image/vnd.microsoft.icon"
        case "pdf": return "application/pdf"
        case "wasm": return "application/wasm"
        case "woff2": return "font/woff2"
        case "mp4": return "video/mp4"
        case "yaml", "yml": return "application/yaml"
        default: return "application/octet-stream"
        }
    }
}
