import LookoutTLS

/// `upstream_proxies`: the parent proxies requests go through, per host.
extension LookoutConfiguration {
    public struct UpstreamProxies: Sendable, Equatable {
        /// `rules`: matched most specific first, like `trust.rules`.
        public var rules: [UpstreamProxyRuleSettings] = []
        /// `default`: for hosts no rule names (`direct` unless set).
        public var defaultProxy: ParentProxySetting = .direct
        public init() {}
    }
}

/// One `upstream_proxies.rules[i]`.
public struct UpstreamProxyRuleSettings: Sendable, Equatable {
    public var hosts: [HostPattern] = []
    public var proxy: ParentProxySetting = .direct
    public init() {}
}

/// `"direct"`, `"http://[user:password@]host[:port]"`, or a SOCKS5 parent:
/// `"socks5://…"` (Lookout resolves names) or `"socks5h://…"` (the parent does).
public enum ParentProxySetting: Sendable, Equatable {
    case direct
    case proxy(host: String, port: Int, user: String?, password: String?)
    case socks(host: String, port: Int, user: String?, password: String?, remoteNames: Bool)

    /// Parses the value; the error says what is wrong.
    public static func parse(_ text: String) -> Result<ParentProxySetting, ParentProxySettingError> {
        if text == "direct" { return .success(.direct) }
        let schemes = ["http://", "socks5://", "socks5h://"]
        guard let scheme = schemes.first(where: { text.lowercased().hasPrefix($0) }) else {
            return .failure(.init(message: text.hasPrefix("https://")
                ? "only http://, socks5:// and socks5h:// parent proxies are supported (TLS to the parent is not)"
                : "expected \"direct\", an http://[user:password@]host[:port] URL, or socks5:// or socks5h://"))
        }
        var rest = Substring(text.dropFirst(scheme.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#") else {
            return .failure(.init(message: "a parent proxy URL has no path, query or fragment"))
        }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let pieces = userinfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let decodedUser = percentDecoded(pieces[0]), !decodedUser.isEmpty else {
                return .failure(.init(message: "the user name in the URL is empty or badly percent-encoded"))
            }
            user = decodedUser
            if pieces.count == 2 {
                guard let decoded = percentDecoded(pieces[1]) else {
                    return .failure(.init(message: "the password in the URL is badly percent-encoded"))
                }
                password = decoded
            }
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return .failure(.init(message: "unclosed [ in the host")) }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                return .failure(.init(message: "unexpected text after the host"))
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { return .failure(.init(message: "the URL has no host")) }
        var port = scheme == "http://" ? 80 : 1080
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value), portText.allSatisfy(\.isNumber) else {
                return .failure(.init(message: "the port must be a number from 1 to 65535"))
            }
            port = value
        }
        if scheme != "http://" {
            // RFC 1929 §2: each of the name and the password is 1 to 255 bytes.
            if let user, user.utf8.count > 255 || (password?.utf8.count ?? 0) > 255 || (password?.isEmpty ?? true) {
                return .failure(.init(message: "SOCKS5 user name and password must each be 1 to 255 bytes"))
            }
            return .success(.socks(host: host.lowercased(), port: port, user: user, password: password,
                                   remoteNames: scheme == "socks5h://"))
        }
        return .success(.proxy(host: host.lowercased(), port: port, user: user, password: password))
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

public struct ParentProxySettingError: Error, Sendable {
    public let message: String
}
