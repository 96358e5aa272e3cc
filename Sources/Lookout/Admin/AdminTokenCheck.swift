import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// `admin.token`: every admin page but `/healthz` asks for it, as `Authorization: Bearer TOKEN`
/// (RFC 6750 §2.1), as the cookie a browser got from one `?token=TOKEN` (RFC 6750 §2.3, then an
/// HttpOnly cookie so the token leaves the address bar and scripts cannot read it), or as that
/// cookie alone.
struct AdminTokenCheck {
    static let cookieName = "lookout_admin_token"

    enum Outcome: Equatable {
        /// Accepted; `setCookie` when it came as `?token=` and the answer should set the cookie.
        case accepted(setCookie: Bool)
        case refused
    }

    let token: [UInt8]

    init(token: String) {
        self.token = Array(token.utf8)
    }

    func check(_ fields: HTTPFields, query: String?) -> Outcome {
        if let authorization = fields[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            // The scheme is case-insensitive (RFC 9110 §11.1).
            if parts.count == 2, parts[0].lowercased() == "bearer", matches(parts[1].trimmingOWS()) {
                return .accepted(setCookie: false)
            }
        }
        // Each Cookie field is a `; `-separated list (RFC 6265 §5.4).
        for field in fields[values: .cookie] {
            for pair in field.split(separator: ";") {
                let trimmed = pair.trimmingOWS()
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == Self.cookieName else { continue }
                if matches(trimmed[trimmed.index(after: equals)...]) { return .accepted(setCookie: false) }
            }
        }
        if let given = FormURLEncoding.parameters(query)["token"], matches(given) {
            return .accepted(setCookie: true)
        }
        return .refused
    }

    /// `Set-Cookie` for a browser that brought the token in the query: sent back on every
    /// same-site request to this host, never readable by the page's scripts.
    var cookie: String {
        "\(Self.cookieName)=\(String(decoding: token, as: UTF8.self)); Path=/; HttpOnly; SameSite=Strict"
    }

    /// Compares in time that does not depend on where the first difference is (only the
    /// length may show).
    private func matches<S: StringProtocol>(_ candidate: S) -> Bool {
        guard !token.isEmpty, candidate.utf8.count == token.count else { return false }
        var difference: UInt8 = 0
        for (byte, expected) in zip(candidate.utf8, token) { difference |= byte ^ expected }
        return difference == 0
    }

    /// `path` with the value of any `token=` parameter replaced, for records: the token is a secret.
    static func redacting(_ path: String) -> String {
        guard let question = path.firstIndex(of: "?"), path[question...].contains("token=") else { return path }
        let pairs = path[path.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
        let redacted = pairs.map { pair in pair.hasPrefix("token=") ? "token=REDACTED" : String(pair) }
        return String(path[...question]) + redacted.joined(separator: "&")
    }
}
