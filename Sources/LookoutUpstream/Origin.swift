import LookoutTLS
import LookoutModel

/// Where an upstream request goes: scheme, host and port; also the connection-pool key, so
/// plain and TLS connections to one host:port are never mixed up.
///
/// A class: an exchange hands its origin to the stages, the attempt, the task and the pool, and
/// a copy of a struct of five strings retained each of them at every hand-over (ten copies and
/// thirty retains per proxied request, counted with uprobes); all its properties are constants.
package final class Origin: Hashable, Sendable {
    package let host: String
    package let port: Int
    /// https: the connection runs TLS, and the host's trust rule judges the certificate.
    package let isSecure: Bool
    /// The parent proxy the connection goes through (`upstream_proxies`), or nil for direct.
    /// Part of the pool key: a connection through a parent is never reused for a direct one.
    package let parent: ParentProxy?
    /// The address to connect to instead of resolving `host`: a captured connection's original
    /// destination (an IP literal), while `host` is the name it asked for (SNI, Host). Part of
    /// the pool key.
    package let dialAddress: String?
    /// `host` prepared for the per-host rule sets, once.
    package let ruleKey: HostRuleKey
    /// "host:port", IPv6 in brackets. Made once: every request names it several times (its
    /// attempt's record, the TLS session cache, HTTP/2's `:authority`).
    package let authority: String
    /// The Host field value (RFC 9110 §7.2): the port only when it is not the scheme's default.
    package let hostFieldValue: String

    package init(host: String, port: Int, isSecure: Bool = false, parent: ParentProxy? = nil, ruleKey: HostRuleKey? = nil,
                 dialAddress: String? = nil) {
        self.host = host
        self.port = port
        self.isSecure = isSecure
        self.parent = parent
        self.dialAddress = dialAddress == host ? nil : dialAddress
        self.ruleKey = ruleKey ?? HostRuleKey(host)
        // An IPv6 literal needs brackets. Bytes, not `String.contains(":")`, which walks
        // grapheme clusters.
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        authority = "\(name):\(port)"
        hostFieldValue = port == (isSecure ? 443 : 80) ? name : authority
    }

    // The pool key: `ruleKey` follows from `host`.
    package static func == (a: Origin, b: Origin) -> Bool {
        a.host == b.host && a.port == b.port && a.isSecure == b.isSecure && a.parent == b.parent
            && a.dialAddress == b.dialAddress
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(isSecure)
        hasher.combine(parent)
        hasher.combine(dialAddress)
    }

    /// The pool key of plain requests through `parent`: one connection to the parent serves
    /// every origin (each request names its URL in absolute form).
    package static func parentHop(_ parent: ParentProxy) -> Origin {
        Origin(host: parent.host, port: parent.port, isSecure: false, parent: parent)
    }

    package var scheme: String { isSecure ? "https" : "http" }

    /// "https://host[:port]" followed by `path`, as a client would have written the URL.
    package func url(path: String) -> String { "\(scheme)://\(hostFieldValue)\(path)" }
}
