import LookoutTLS

/// `map`: requests sent to another origin (`remote`) or answered from a file (`local`).
extension LookoutConfiguration {
    public struct Map: Sendable, Equatable {
        /// `remote`: the longest matching `from` prefix wins.
        public var remote: [MapRemoteSettings] = []
        /// `local`: a request whose URL (without its query) is a rule's `from` is answered from its file.
        public var local: [MapLocalSettings] = []
        public init() {}

        public var isEmpty: Bool { remote.isEmpty && local.isEmpty }
    }
}

/// A URL prefix in a map rule: scheme, host, port (the scheme's default when not written) and a
/// path prefix ("/" when not written). The `from` side's host may be a pattern (`*.example.com`).
public struct MapURLPrefix: Sendable, Equatable {
    public var scheme: String
    /// As written (lowercased); for `from`, `hostPattern` says what it matches.
    public var host: String
    public var hostPattern: HostPattern
    public var port: Int
    public var path: String
    /// The prefix as written, for messages and records.
    public var text: String

    public var isSecure: Bool { scheme == "https" }

    public init(scheme: String, host: String, hostPattern: HostPattern, port: Int, path: String, text: String) {
        self.scheme = scheme
        self.host = host
        self.hostPattern = hostPattern
        self.port = port
        self.path = path
        self.text = text
    }

    /// Parses `scheme://host[:port][/path]`; nil with the reason otherwise. IPv6 hosts in brackets.
    public static func parse(_ text: String, allowPattern: Bool) -> Result<MapURLPrefix, MapURLError> {
        let lowered = text.lowercased()
        let scheme: String
        if lowered.hasPrefix("http://") { scheme = "http" } else if lowered.hasPrefix("https://") { scheme = "https" } else {
            return .failure(MapURLError("expected an http:// or https:// URL"))
        }
        let rest = text.dropFirst(scheme.count + 3)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        guard !authority.isEmpty else { return .failure(MapURLError("the URL names no host")) }
        guard !authority.contains("@") else { return .failure(MapURLError("credentials in the URL are not supported")) }
        guard !path.contains("#") else { return .failure(MapURLError("a fragment is never sent; leave it out")) }
        var host = Substring(authority)
        var port = scheme == "https" ? 443 : 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return .failure(MapURLError("unclosed IPv6 bracket")) }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let value = Int(after.dropFirst()), (1...65535).contains(value) else {
                    return .failure(MapURLError("the port must be between 1 and 65535"))
                }
                port = value
            } else if !after.isEmpty {
                return .failure(MapURLError("unexpected text after the IPv6 address"))
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let value = Int(host[host.index(after: colon)...]), (1...65535).contains(value) else {
                return .failure(MapURLError("the port must be between 1 and 65535"))
            }
            port = value
            host = host[..<colon]
        }
        let pattern: HostPattern
        do {
            pattern = try HostPattern(String(host))
        } catch {
            return .failure(MapURLError(error.message))
        }
        if pattern.kind != .exact && !allowPattern {
            return .failure(MapURLError("the target must name one host, not a pattern"))
        }
        return .success(MapURLPrefix(scheme: scheme, host: String(host).lowercased(), hostPattern: pattern, port: port,
                                     path: path, text: text))
    }
}

public struct MapURLError: Error, Sendable {
    public let message: String
    init(_ message: String) { self.message = message }
}

/// One `map.remote[i]`.
public struct MapRemoteSettings: Sendable, Equatable {
    public var from: MapURLPrefix
    public var to: MapURLPrefix
    /// `preserve_host` (default false): keep the client's Host / :authority instead of the target's.
    public var preserveHost = false
    /// `allow_downgrade` (default false): an https `from` may go to an http `to`; without it such
    /// requests are refused (`map_downgrade_refused`), never silently sent in the clear.
    public var allowDowngrade = false

    public init(from: MapURLPrefix, to: MapURLPrefix) {
        self.from = from
        self.to = to
    }
}

/// One `map.local[i]`.
public struct MapLocalSettings: Sendable, Equatable {
    public var from: MapURLPrefix
    /// `file`: resolved against the config file's folder; checked readable when the config loads.
    public var file: String
    /// `status` (default 200).
    public var status = 200
    /// `content_type`: overrides the type taken from the file's extension.
    public var contentType: String?

    public init(from: MapURLPrefix, file: String) {
        self.from = from
        self.file = file
    }
}
