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

/// `"direct"`, or `"http://[user:password@]host[:port]"`.
public enum ParentProxySetting: Sendable, Equatable {
    case direct
    case proxy(host: String, port: Int, user: String?, password: String?)

    /// Parses the value; the error says what is wrong.
    public static func parse(_ text: String) -> Result<ParentProxySetting, ParentProxySettingError> {
        if text == "direct" { return .success(.direct) }
        guard text.hasPrefix("http://") else {
            return .failure(.init(message: text.hasPrefix("https://")
                ? "only http:// parent proxies are supported (TLS to the parent is not)"
                : "expected \"direct\" or an http://[user:password@]host[:port] URL"))
        }
        var rest = Substring(text.dropFirst("http://".count))
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
        var port = 80
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value), portText.allSatisfy(\.isNumber) else {
                return .failure(.init(message: "the port must be a number from 1 to 65535"))
            }
            port = value
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
