/// Every finding the audit can report: its id, severity, CWE and what triggers it (the README's
/// table is this list).
public enum AuditFindingCatalog {
    public struct Entry: Sendable {
        public let id: String
        public let severity: AuditFinding.Severity
        public let cwe: Int
        public let trigger: String
    }

    public static let entries: [Entry] = [
        Entry(id: "cookie-no-secure", severity: .medium, cwe: 614, trigger: "an https response sets a cookie without Secure"),
        Entry(id: "cookie-no-httponly", severity: .low, cwe: 1004, trigger: "a cookie is set without HttpOnly"),
        Entry(id: "cookie-no-samesite", severity: .low, cwe: 1275, trigger: "a cookie is set without SameSite"),
        Entry(id: "cookie-over-http", severity: .medium, cwe: 319, trigger: "a cookie is set over plain http"),
        Entry(id: "hsts-missing", severity: .medium, cwe: 319, trigger: "an https HTML document without Strict-Transport-Security"),
        Entry(id: "hsts-weak", severity: .low, cwe: 319, trigger: "Strict-Transport-Security with max-age under 180 days"),
        Entry(id: "xcto-missing", severity: .low, cwe: 693, trigger: "HTML without X-Content-Type-Options: nosniff"),
        Entry(id: "csp-missing", severity: .low, cwe: 693, trigger: "HTML without Content-Security-Policy"),
        Entry(id: "frame-protection-missing", severity: .low, cwe: 1021,
              trigger: "HTML without X-Frame-Options or a CSP frame-ancestors"),
        Entry(id: "credentials-in-url", severity: .high, cwe: 598, trigger: "a URL with a user name or password in it"),
        Entry(id: "secret-in-query", severity: .medium, cwe: 598,
              trigger: "a query parameter named like a token, key, password or secret"),
        Entry(id: "basic-auth-over-http", severity: .high, cwe: 319, trigger: "Authorization: Basic sent over plain http"),
        Entry(id: "cors-reflects-origin", severity: .medium, cwe: 942,
              trigger: "Access-Control-Allow-Origin echoes the request's Origin with Allow-Credentials: true"),
        Entry(id: "tls-old-version", severity: .high, cwe: 327, trigger: "upstream TLS older than 1.2"),
        Entry(id: "tls-weak-cipher", severity: .medium, cwe: 327, trigger: "an upstream cipher with RC4, DES, 3DES, NULL, EXPORT, MD5 or no authentication"),
        Entry(id: "certificate-expiring", severity: .medium, cwe: 298,
              trigger: "the origin's certificate expires within certificate_expiry_days"),
        Entry(id: "trust-evaluation-disabled", severity: .high, cwe: 295,
              trigger: "an upstream chain accepted only because its trust rule disables evaluation"),
        Entry(id: "server-version-disclosed", severity: .info, cwe: 200, trigger: "Server or X-Powered-By names a version"),
    ]

    public static let ids = entries.map(\.id)

    static let byID: [String: Entry] = Dictionary(uniqueKeysWithValues: entries.map { ($0.id, $0) })

    /// The finding `id` with `evidence`.
    public static func finding(_ id: String, _ evidence: String) -> AuditFinding {
        let entry = byID[id]!
        return AuditFinding(id: id, severity: entry.severity, cwe: entry.cwe, evidence: evidence)
    }
}
