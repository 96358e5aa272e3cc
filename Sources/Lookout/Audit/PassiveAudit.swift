import HTTPTypes
import LookoutHTTP
import LookoutModel

/// The passive checks (`audit`): what one exchange's request, response head and upstream TLS show,
/// without a request of Lookout's own. Evidence names what was seen, never a secret's value.
package enum PassiveAudit {
    package struct Input {
        var url: String
        var requestFields: HTTPFields
        var responseFields: HTTPFields
        var tls: UpstreamTLSDetails?
        var now: Int64
        var certificateExpiryDays: Int

        package init(url: String, requestFields: HTTPFields, responseFields: HTTPFields, tls: UpstreamTLSDetails?, now: Int64,
                     certificateExpiryDays: Int) {
            self.url = url
            self.requestFields = requestFields
            self.responseFields = responseFields
            self.tls = tls
            self.now = now
            self.certificateExpiryDays = certificateExpiryDays
        }
    }

    package static func findings(_ input: Input) -> [AuditFinding] {
        var found: [AuditFinding] = []
        let secure = input.url.hasPrefix("https://")
        cookies(input.responseFields, secure: secure, into: &found)
        let contentType = input.responseFields[.contentType]?.lowercased() ?? ""
        if contentType.hasPrefix("text/html") { document(input.responseFields, secure: secure, into: &found) }
        request(input.url, input.requestFields, secure: secure, into: &found)
        cors(input.requestFields, input.responseFields, into: &found)
        if let tls = input.tls { transport(tls, now: input.now, expiryDays: input.certificateExpiryDays, into: &found) }
        for name in [HTTPField.Name.server, HTTPField.Name("X-Powered-By")!] {
            if let value = input.responseFields[name], value.contains(where: \.isNumber), value.contains("/") || value.contains(" ") {
                found.append(AuditFindingCatalog.finding("server-version-disclosed", "\(name.canonicalName): \(value)"))
            }
        }
        return found
    }

    /// RFC 6265 §4.1.2: Secure, HttpOnly and (draft-ietf-httpbis-rfc6265bis) SameSite.
    private static func cookies(_ fields: HTTPFields, secure: Bool, into found: inout [AuditFinding]) {
        for value in fields[values: .setCookie] {
            let parts = value.split(separator: ";").map { $0.trimmingCharacters(in: " \t").lowercased() }
            let name = String(value.prefix { $0 != "=" && $0 != ";" }).trimmingCharacters(in: " \t")
            let attributes = Set(parts.dropFirst().map { String($0.prefix { $0 != "=" }) })
            let evidence = "Set-Cookie: \(name)=[redacted]"
            if !secure { found.append(AuditFindingCatalog.finding("cookie-over-http", evidence)) }
            if secure && !attributes.contains("secure") { found.append(AuditFindingCatalog.finding("cookie-no-secure", evidence)) }
            if !attributes.contains("httponly") { found.append(AuditFindingCatalog.finding("cookie-no-httponly", evidence)) }
            if !attributes.contains("samesite") { found.append(AuditFindingCatalog.finding("cookie-no-samesite", evidence)) }
        }
    }

    /// An HTML document's protections: HSTS (RFC 6797 §6.1) on https, nosniff, CSP, framing.
    private static func document(_ fields: HTTPFields, secure: Bool, into found: inout [AuditFinding]) {
        if secure {
            if let hsts = fields[HTTPField.Name("Strict-Transport-Security")!] {
                let maxAge = hsts.lowercased().split(separator: ";").compactMap { directive -> Int? in
                    let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: " \t\"") }
                    return parts.count == 2 && parts[0] == "max-age" ? Int(parts[1]) : nil
                }.first ?? 0
                if maxAge < 15_552_000 { found.append(AuditFindingCatalog.finding("hsts-weak", "Strict-Transport-Security: \(hsts)")) }
            } else {
                found.append(AuditFindingCatalog.finding("hsts-missing", "no Strict-Transport-Security on an https document"))
            }
        }
        if fields[HTTPField.Name("X-Content-Type-Options")!]?.lowercased().trimmingCharacters(in: " ") != "nosniff" {
            found.append(AuditFindingCatalog.finding("xcto-missing", "no X-Content-Type-Options: nosniff"))
        }
        let csp = fields[values: HTTPField.Name("Content-Security-Policy")!].joined(separator: "; ")
        if csp.isEmpty { found.append(AuditFindingCatalog.finding("csp-missing", "no Content-Security-Policy")) }
        if fields[HTTPField.Name("X-Frame-Options")!] == nil && !csp.lowercased().contains("frame-ancestors") {
            found.append(AuditFindingCatalog.finding("frame-protection-missing", "no X-Frame-Options and no CSP frame-ancestors"))
        }
    }

    /// Parameter names that carry credentials (a substring of the name, lowercased).
    static let secretNames = ["token", "apikey", "api_key", "api-key", "key", "password", "passwd", "pwd", "secret", "session",
                              "auth", "credential", "signature", "sig"]

    private static func request(_ url: String, _ fields: HTTPFields, secure: Bool, into found: inout [AuditFinding]) {
        if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            if let at = authority.lastIndex(of: "@") {
                let user = authority[..<at].prefix { $0 != ":" }
                found.append(AuditFindingCatalog.finding("credentials-in-url", "\(user):[redacted]@\(authority[authority.index(after: at)...])"))
            }
        }
        if let query = url.split(separator: "?", maxSplits: 1).dropFirst().first {
            for pair in query.split(separator: "&") {
                let name = String(pair.prefix { $0 != "=" }).lowercased()
                let words = name.split { !$0.isLetter && !$0.isNumber }.map(String.init) + [name]
                if words.contains(where: { word in secretNames.contains { word == $0 || ($0.count > 4 && word.contains($0)) } }) {
                    found.append(AuditFindingCatalog.finding("secret-in-query", "query parameter \(name)=[redacted]"))
                }
            }
        }
        if !secure, let authorization = fields[.authorization], authorization.lowercased().hasPrefix("basic ") {
            found.append(AuditFindingCatalog.finding("basic-auth-over-http", "Authorization: Basic [redacted]"))
        }
    }

    /// The Fetch standard's CORS: echoing any Origin with credentials lets every site read the answer.
    private static func cors(_ request: HTTPFields, _ response: HTTPFields, into found: inout [AuditFinding]) {
        guard let origin = request[HTTPField.Name("Origin")!], origin != "null",
              response[HTTPField.Name("Access-Control-Allow-Origin")!] == origin,
              response[HTTPField.Name("Access-Control-Allow-Credentials")!]?.lowercased() == "true" else { return }
        found.append(AuditFindingCatalog.finding("cors-reflects-origin",
                                                 "Access-Control-Allow-Origin: \(origin) with Access-Control-Allow-Credentials: true"))
    }

    private static func transport(_ tls: UpstreamTLSDetails, now: Int64, expiryDays: Int, into found: inout [AuditFinding]) {
        if ["TLSv1", "TLSv1.1", "SSLv3", "SSLv2"].contains(tls.version) {
            found.append(AuditFindingCatalog.finding("tls-old-version", "upstream \(tls.version)"))
        }
        let cipher = tls.cipher.uppercased()
        if ["RC4", "DES", "NULL", "EXPORT", "MD5", "ANON", "ADH", "AECDH"].contains(where: { cipher.contains($0) }) {
            found.append(AuditFindingCatalog.finding("tls-weak-cipher", "upstream cipher \(tls.cipher)"))
        }
        if let notAfter = tls.leafNotAfter, notAfter - now < Int64(expiryDays) * 86_400 {
            let days = (notAfter - now) / 86_400
            found.append(AuditFindingCatalog.finding("certificate-expiring",
                                                     days < 0 ? "the origin's certificate expired \(-days) days ago"
                                                              : "the origin's certificate expires in \(days) days"))
        }
        if tls.trust.evaluator == "disabled" {
            found.append(AuditFindingCatalog.finding("trust-evaluation-disabled", "trust rule \(tls.trust.rule) disables evaluation"))
        }
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
