/// One entry of a certificate's subjectAltName extension (RFC 5280 §4.2.1.6) of the two
/// kinds TLS server identity uses (RFC 6125 §6.4): DNS names and IP addresses.
public enum SubjectAlternativeName: Sendable, Hashable, CustomStringConvertible {
    /// A dNSName, e.g. "example.com" or "*.example.com".
    case dnsName(String)
    /// An iPAddress in canonical text form, e.g. "192.0.2.1" or "2001:db8::1".
    case ipAddress(String)

    /// The SAN for `host`: an IP address when `host` is an IPv4 or IPv6 literal (brackets
    /// allowed), a DNS name otherwise.
    public init(host: String) {
        if let bytes = HostName.ipAddressBytes(host), let text = HostName.formatIPAddress(bytes) {
            self = .ipAddress(text)
        } else {
            self = .dnsName(HostName.normalize(host))
        }
    }

    /// "DNS:example.com" or "IP:192.0.2.1", the spelling `openssl x509 -text` uses.
    public var description: String {
        switch self {
        case .dnsName(let name): return "DNS:\(name)"
        case .ipAddress(let address): return "IP:\(address)"
        }
    }
}
