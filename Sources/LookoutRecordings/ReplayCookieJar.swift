import LookoutHTTP

/// The cookies replayed responses set, per host, for `lookout replay --session`: they replace the
/// recorded `Cookie` values of the same names in the requests that follow to that host, as a
/// browser's jar would send them (RFC 6265 §5.4), so a recorded login replays against a server that
/// issues new session ids. Attributes other than expiry are not modelled: a replay goes to the
/// recorded URLs only.
public struct ReplayCookieJar: Sendable {
    private var cookies: [String: [(name: String, value: String)]] = [:]

    public init() {}

    /// Takes the `Set-Cookie` fields of a response from `host` (RFC 6265 §5.2): name=value, and a
    /// `Max-Age` of zero or less, or an `Expires` in the past, removes the cookie.
    public mutating func store(_ headers: [(name: String, value: String)], host: String, nowSeconds: Int64) {
        for field in headers where field.name.lowercased() == "set-cookie" {
            let parts = field.value.split(separator: ";", omittingEmptySubsequences: false)
            guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals].trimmingOWS())
            let value = String(pair[pair.index(after: equals)...].trimmingOWS())
            guard !name.isEmpty else { continue }
            var expired = false
            for attribute in parts.dropFirst() {
                let text = attribute.trimmingOWS().lowercased()
                if text.hasPrefix("max-age="), let seconds = Int(text.dropFirst(8)), seconds <= 0 { expired = true }
                if text.hasPrefix("expires="), let date = HTTPDate.unixSeconds(String(attribute.trimmingOWS().dropFirst(8))), date <= Double(nowSeconds) {
                    expired = true
                }
            }
            var kept = cookies[host, default: []].filter { $0.name != name }
            if !expired { kept.append((name, value)) }
            cookies[host] = kept
        }
    }

    /// `headers` with the jar's cookies for `host` in the `Cookie` field: a recorded cookie of the
    /// same name takes the jar's value, the others stay as recorded, the jar's new ones are added.
    public func apply(to headers: [(name: String, value: String)], host: String) -> [(name: String, value: String)] {
        guard let jar = cookies[host], !jar.isEmpty else { return headers }
        var pairs: [(name: String, value: String)] = []
        for field in headers where field.name.lowercased() == "cookie" {
            for piece in field.value.split(separator: ";") {
                let text = piece.trimmingOWS()
                guard let equals = text.firstIndex(of: "=") else { continue }
                pairs.append((String(text[..<equals]), String(text[text.index(after: equals)...])))
            }
        }
        for cookie in jar {
            if let index = pairs.firstIndex(where: { $0.name == cookie.name }) {
                pairs[index].value = cookie.value
            } else {
                pairs.append(cookie)
            }
        }
        var result = headers.filter { $0.name.lowercased() != "cookie" }
        result.append(("Cookie", pairs.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")))
        return result
    }
}
