import HTTPTypes
import LookoutHTTP
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// Checks `Proxy-Authorization: Basic` credentials (RFC 9110 §11.7.2, RFC 7617).
struct ProxyAuthenticator: Sendable {
    /// The challenge sent with 407.
    static let challenge = "Basic realm=\"lookout\", charset=\"UTF-8\""

    /// base64("name:password") of every accepted pair.
    private let tokens: [[UInt8]]

    /// Nil when `credentials` is empty (authentication off).
    init?(credentials: [String]) {
        guard !credentials.isEmpty else { return nil }
        tokens = credentials.map { Array(Base64.encode(Array($0.utf8)).utf8) }
    }

    /// What a request's `Proxy-Authorization` says of its client.
    enum Outcome: Equatable {
        case missing
        case invalid
        case user(String)
    }

    func outcome(_ fields: HTTPFields) -> Outcome {
        guard let value = fields[.proxyAuthorization] else { return .missing }
        guard accepts(fields) else { return .invalid }
        let token = value.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? ""
        let decoded = Base64.decode(token).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return .user(String(decoded.prefix { $0 != ":" }))
    }

    func accepts(_ fields: HTTPFields) -> Bool {
        guard let value = fields[.proxyAuthorization] else { return false }
        let bytes = Array(value.utf8)
        let scheme = Array("basic ".utf8)
        guard bytes.count > scheme.count,
              zip(bytes.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 | 0x20 }) else { return false }
        var token = bytes[scheme.count...]
        while token.first == UInt8(ascii: " ") { token = token.dropFirst() }
        // Compared against every token, in time independent of where they differ.
        var matched = false
        for expected in tokens where Self.constantTimeEqual(token, expected) { matched = true }
        return matched
    }

    /// A SOCKS5 username and password (RFC 1929), checked against the same list.
    func accepts(user: String, password: String) -> Bool {
        let token = Array(Base64.encode(Array("\(user):\(password)".utf8)).utf8)
        var matched = false
        for expected in tokens where Self.constantTimeEqual(token[...], expected) { matched = true }
        return matched
    }

    private static func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

extension RequestTarget {
    /// Absolute-form and CONNECT requests go through the proxy; origin-form ones are for the proxy itself.
    var isProxied: Bool {
        switch self {
        case .absolute, .authority: return true
        case .origin, .asterisk: return false
        }
    }
}
