/// A host pattern for trust rules and interception lists:
///
/// - `api.example.com` or `192.0.2.1` — exactly that host (case-insensitive, trailing dot
///   ignored; IPv6 may be bracketed and is compared by address);
/// - `*.example.com` — exactly one label in front of `example.com` (`a.example.com`, not
///   `a.b.example.com`, not `example.com`), as in RFC 6125 §6.4.3 wildcard certificates;
/// - `**.example.com` — one or more labels in front of `example.com`;
/// - `**` — every host.
///
/// Wildcards never match IP literals, except `**`.
public struct HostPattern: Sendable, Hashable, CustomStringConvertible {
    /// The shape of a pattern, from most to least specific.
    public enum Kind: Int, Sendable, Hashable, Comparable {
        /// One host.
        case exact = 0
        /// `*.domain`.
        case singleLabelWildcard = 1
        /// `**.domain`.
        case anyDepthWildcard = 2
        /// `**`.
        case any = 3

        /// Orders by specificity: `exact` first.
        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The pattern's shape.
    public let kind: Kind
    /// The host for `exact`, the domain after the wildcard label otherwise ("" for `**`).
    public let domain: String
    /// The pattern as given.
    public let text: String

    /// Parses a pattern; throws `invalid_host` for anything else (a `*` other than as the
    /// whole first label, an empty or malformed domain).
    public init(_ text: String) throws(CertificateError) {
        self.text = text
        let pattern = HostName.normalize(text.trimmingASCIIWhitespace())
        func invalid(_ why: String) -> CertificateError {
            CertificateError(.invalidHost, "host pattern \"\(text)\": \(why)")
        }
        if pattern == "**" {
            kind = .any
            domain = ""
            return
        }
        let wildcardKind: Kind?
        let rest: Substring
        if pattern.hasPrefix("**.") {
            wildcardKind = .anyDepthWildcard
            rest = pattern.dropFirst(3)
        } else if pattern.hasPrefix("*.") {
            wildcardKind = .singleLabelWildcard
            rest = pattern.dropFirst(2)
        } else {
            wildcardKind = nil
            rest = Substring(pattern)
        }
        guard !rest.contains("*") else { throw invalid("'*' is only allowed as the whole first label") }
        if let wildcardKind {
            guard HostName.isValidDNSName(String(rest)) else { throw invalid("\"\(rest)\" is not a domain name") }
            kind = wildcardKind
            domain = String(rest)
        } else if let address = HostName.ipAddressBytes(String(rest)).flatMap(HostName.formatIPAddress) {
            kind = .exact
            domain = address
        } else {
            guard HostName.isValidDNSName(String(rest)) else { throw invalid("not a host name or IP address") }
            kind = .exact
            domain = String(rest)
        }
    }

    /// Whether `host` (a name or IP literal, any case, brackets allowed) matches.
    public func matches(_ host: String) -> Bool {
        let normalized = HostName.normalize(host)
        switch kind {
        case .any:
            return true
        case .exact:
            if let address = HostName.ipAddressBytes(normalized).flatMap(HostName.formatIPAddress) {
                return address == domain
            }
            return normalized == domain
        case .singleLabelWildcard, .anyDepthWildcard:
            guard !HostName.isIPAddress(normalized), normalized.hasSuffix("." + domain) else { return false }
            let prefix = normalized.dropLast(domain.count + 1)
            guard !prefix.isEmpty, !prefix.hasPrefix("."), !prefix.contains("..") else { return false }
            return kind == .anyDepthWildcard || !prefix.contains(".")
        }
    }

    /// Number of labels in `domain`; among patterns of one kind, more labels is more specific.
    public var domainLabelCount: Int {
        domain.isEmpty ? 0 : domain.split(separator: ".").count
    }

    /// The pattern as given.
    public var description: String { text }
}
