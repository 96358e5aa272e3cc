import HTTPTypes
import LookoutModel
import LookoutTLS
import Testing
@testable import Lookout

@Suite struct PassiveAuditTests {
    private func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    private func ids(url: String, request: [(String, String)] = [], response: [(String, String)],
                     tls: UpstreamTLSDetails? = nil) -> [String] {
        PassiveAudit.findings(PassiveAudit.Input(url: url, requestFields: fields(request), responseFields: fields(response),
                                                 tls: tls, now: 1_800_000_000, certificateExpiryDays: 21)).map(\.id)
    }

    @Test func cookiesAndDocumentsOverHTTPS() {
        #expect(ids(url: "https://a.test/", response: [("Set-Cookie", "sid=abc; Path=/")])
                == ["cookie-no-secure", "cookie-no-httponly", "cookie-no-samesite"])
        #expect(ids(url: "https://a.test/", response: [("Set-Cookie", "sid=abc; Secure; HttpOnly; SameSite=Lax")]).isEmpty)
        #expect(ids(url: "http://a.test/", response: [("Set-Cookie", "sid=abc; HttpOnly; SameSite=Lax")]) == ["cookie-over-http"])
        #expect(ids(url: "https://a.test/", response: [("Content-Type", "text/html")])
                == ["hsts-missing", "xcto-missing", "csp-missing", "frame-protection-missing"])
        #expect(ids(url: "https://a.test/", response: [("Content-Type", "text/html; charset=utf-8"),
                                                        ("Strict-Transport-Security", "max-age=3600"),
                                                        ("X-Content-Type-Options", "nosniff"),
                                                        ("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")])
                == ["hsts-weak"])
        #expect(ids(url: "http://a.test/", response: [("Content-Type", "application/json")]).isEmpty, "not a document")
    }

    @Test func requestsCORSAndServers() throws {
        #expect(ids(url: "http://u:p@a.test/x?access_token=1&page=2&apiKey=3", request: [("Authorization", "Basic dTpw")],
                    response: []) == ["credentials-in-url", "secret-in-query", "secret-in-query", "basic-auth-over-http"])
        let evidence = PassiveAudit.findings(PassiveAudit.Input(
            url: "http://u:p@a.test/x?token=s3cret", requestFields: fields([]), responseFields: fields([]), tls: nil, now: 0,
            certificateExpiryDays: 21)).map(\.evidence)
        #expect(evidence == ["u:[redacted]@a.test", "query parameter token=[redacted]"] && !evidence.joined().contains("s3cret"))
        #expect(ids(url: "https://a.test/", request: [("Origin", "https://evil.test")],
                    response: [("Access-Control-Allow-Origin", "https://evil.test"), ("Access-Control-Allow-Credentials", "true")])
                == ["cors-reflects-origin"])
        #expect(ids(url: "https://a.test/", response: [("Server", "nginx/1.25.3")]) == ["server-version-disclosed"])
        #expect(ids(url: "https://a.test/", response: [("Server", "nginx")]).isEmpty)
    }

    @Test func upstreamTLS() {
        let decision = TrustDecision(host: "a.test", rule: "lab", evaluator: "disabled", outcome: .passed, reason: nil, message: nil,
                                     presentedPins: [], enforced: true)
        var tls = UpstreamTLSDetails(version: "TLSv1.1", cipher: "DES-CBC3-SHA", serverName: "a.test", applicationProtocol: nil,
                                     resumed: false, trust: decision)
        tls.leafNotAfter = 1_800_000_000 + 5 * 86_400
        #expect(ids(url: "https://a.test/", response: [], tls: tls)
                == ["tls-old-version", "tls-weak-cipher", "certificate-expiring", "trust-evaluation-disabled"])
    }
}
