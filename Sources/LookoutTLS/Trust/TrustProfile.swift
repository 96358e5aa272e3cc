/// The certificate profile a chain is judged under, beyond path validation itself.
///
/// Browsers hold chains to two standards: roots in their root program must follow the CA/Browser
/// Forum Baseline Requirements, while roots a user installed are judged by RFC 5280 §6 path
/// validation alone. A private CA made with `openssl req -x509` defaults (basicConstraints
/// `CA:TRUE`, no keyUsage) is accepted under the second and refused under the first.
public enum TrustProfile: String, Sendable, Equatable, CaseIterable {
    /// RFC 5280 plus the Web PKI profile (CA/B Forum BR §7.1): OpenSSL's `X509_V_FLAG_X509_STRICT`
    /// and `WebPKIProfile`. The default for chains that end in a system-bundle root.
    case webpki
    /// RFC 5280 §6 path validation as browsers apply it to roots a user installed: a CA without
    /// keyUsage is accepted, a CA keyUsage without keyCertSign is refused, a leaf's
    /// extendedKeyUsage must allow serverAuth when present. The default for chains that end in a
    /// `ca_files` anchor.
    case rfc5280
}
