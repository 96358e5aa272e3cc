import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// Where the streams of a client's HTTP/2 connection go, and what is refused before they go.
enum HTTP2StreamRouting {
    /// An intercepted CONNECT's: every stream to its origin, whose host `:authority` must name.
    case intercepted(Origin)
    /// A cleartext connection upgraded with `h2c`: each stream names its own origin, and is
    /// authenticated and checked as the forward proxy's HTTP/1.1 requests are.
    case forwardProxy(ClientEnvironment)

    var kind: ExchangeSummary.Kind {
        if case .intercepted = self { return .intercepted }
        return .http
    }

    /// What a refused request's record names when there is no URL to name.
    var fallbackURL: String {
        if case .intercepted(let origin) = self { return origin.authority }
        return ""
    }
}

/// A stream's request, on its way: its head as the exchange sees it, toward `origin`.
struct HTTP2StreamRoute {
    var head: RequestHead
    let origin: Origin
    let path: String
    let url: String
    /// The `auth.users` name the stream's own `Proxy-Authorization` gave (a forward proxy's stream).
    var user: String? = nil
}

extension HTTP2StreamRouting {
    /// A forward proxy's request over HTTP/2. RFC 9113 §8.3.1 has `:scheme`, `:authority` and an
    /// origin-form `:path`; a client that spoke HTTP/1.1 to the proxy before upgrading may keep
    /// the absolute-form target in `:path` (curl does), which names the same things.
    static func forwardRoute(_ head: RequestHead, authority: String?, scheme: String?,
                             environment: ClientEnvironment, rules: ClientRules) -> Result<HTTP2StreamRoute, ProxyError> {
        let url = forwardURL(head.rawTarget, authority: authority, scheme: scheme)
        guard let target = RequestTarget.parseAbsolute(url),
              case .absolute(let targetScheme, let host, let port, let path) = target else {
            return .failure(.requestRejected(reason: .malformedRequest("HTTP/2 request for \"\(url)\"")))
        }
        guard targetScheme == "http" || targetScheme == "https" else {
            return .failure(.requestRejected(reason: .unsupportedScheme(targetScheme)))
        }
        var user: String?
        if let authenticator = rules.authenticator {
            switch authenticator.outcome(head.headerFields) {
            case .user(let name): user = name
            // Under a policy, credentials only identify: without them the address decides.
            case .missing where !rules.credentialsRequired: user = nil
            case .missing, .invalid: return .failure(.requestRejected(reason: .proxyAuthenticationRequired))
            }
        }
        let key = HostRuleKey(host)
        if let refusal = environment.accessRefusal(method: head.method.rawValue, host: key) {
            return .failure(refusal)
        }
        let isSecure = targetScheme == "https"
        let origin = Origin(host: host, port: port ?? (isSecure ? 443 : 80), isSecure: isSecure,
                            parent: environment.exchanges.parentProxy(for: key), ruleKey: key)
        var routed = head
        routed.target = target
        routed.rawTarget = url
        return .success(HTTP2StreamRoute(head: routed, origin: origin, path: path, url: url, user: user))
    }

    /// The URL a forward proxy's stream asks for: its `:path` when that is absolute, else built
    /// from `:scheme`, `:authority` and `:path`.
    static func forwardURL(_ path: String, authority: String?, scheme: String?) -> String {
        path.hasPrefix("/") ? "\(scheme ?? "http")://\(authority ?? "")\(path)" : path
    }
}
