import HTTPTypes
import LookoutHTTP
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What one host's redirect rule allows (config `redirects.rules`).
public struct RedirectRule: Sendable {
    /// Follow redirects inside Lookout (each hop one more upstream attempt); false passes them on.
    public var follow = false
    /// Followed hops allowed in one exchange; one more is `redirect_limit_exceeded`.
    public var maxHops = 10
    /// An https URL may redirect to an http one (applies when passing too).
    public var allowDowngrade = false
    /// Follow to another host; false passes such a redirect to the client.
    public var allowCrossHost = true
    /// `Location` prefixes replaced before the redirect is passed or followed, first match wins.
    public var rewrites: [(from: String, to: String)] = []

    public init(follow: Bool = false, maxHops: Int = 10, allowDowngrade: Bool = false, allowCrossHost: Bool = true,
                rewrites: [(from: String, to: String)] = []) {
        self.follow = follow
        self.maxHops = maxHops
        self.allowDowngrade = allowDowngrade
        self.allowCrossHost = allowCrossHost
        self.rewrites = rewrites
    }
}

/// What the exchange knows when a response is a redirect.
public struct RedirectContext: Sendable {
    public var status: Int
    /// The `Location` value as received.
    public var location: String
    /// The absolute URL that was requested on this hop.
    public var requestURL: String
    public var method: HTTPRequest.Method
    /// Hops followed so far in this exchange.
    public var redirectsFollowed: Int
    /// Every URL requested so far in this exchange.
    public var visitedURLs: Set<String>
    /// The request has a body (which the next hop needs unless the method becomes GET).
    public var hasBody: Bool
    /// That body was kept and can be sent again.
    public var bodyIsReplayable: Bool
}

/// What to do with a redirect (the seeds' `follow` / `doNotFollow` / `modify`, and a refusal).
public enum RedirectDecision: Sendable, Equatable {
    /// Request `url` as the next hop.
    case follow(url: String)
    /// Hand the 3xx to the client; `location` is the rewritten value, nil when unchanged.
    case pass(location: String?)
    /// Answer the client with this error instead.
    case refuse(ProxyError)

    public var name: String {
        switch self {
        case .follow: return "follow"
        case .pass: return "pass"
        case .refuse: return "refuse"
        }
    }
}

/// A decision with what it was about, for `task.willPerformRedirect`.
public struct RedirectOutcome: Sendable, Equatable {
    public var decision: RedirectDecision
    /// The resolved, rewritten target.
    public var target: String
    /// Why: `rule`, `no_rule`, `not_following`, `cross_host`, `body_not_replayable`,
    /// `unsupported_location`, `downgrade`, `loop`, `limit`.
    public var reason: String
}

/// Decides how redirects are handled, like Alamofire's `RedirectHandler`.
public protocol RedirectHandler: Sendable {
    /// Only asked about 301, 302, 303, 307 and 308 responses that carry a `Location`.
    func outcome(for context: RedirectContext) -> RedirectOutcome
    /// Whether redirects from `host` may be followed, so request bodies are worth keeping (307/308).
    func keepsBodies(forHost host: String) -> Bool
}

/// The redirect statuses a proxy may follow (RFC 9110 §15.4); 300, 304 and 305 are never followed.
public enum RedirectStatus {
    public static func isFollowable(_ status: Int) -> Bool {
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308
    }

    /// RFC 9110 §15.4.2–4: 301 and 302 may turn POST into GET (as every browser does), 303 turns
    /// everything but HEAD into GET; 307 and 308 keep the method and the body.
    public static func method(after status: Int, from method: HTTPRequest.Method) -> HTTPRequest.Method {
        switch status {
        case 301, 302: return method == .post ? .get : method
        case 303: return method == .head ? .head : .get
        default: return method
        }
    }
}

/// Redirects by per-host rules; hosts no rule names have their redirects passed on unchanged.
public struct RedirectPolicy: RedirectHandler {
    public let rules: HostRuleSet<RedirectRule>

    public init(rules: HostRuleSet<RedirectRule>) {
        self.rules = rules
    }

    /// Every redirect goes to the client as it came.
    public static let passThrough = RedirectPolicy(rules: .empty)

    public func keepsBodies(forHost host: String) -> Bool {
        rules.rule(for: host)?.follow ?? false
    }

    public func outcome(for context: RedirectContext) -> RedirectOutcome {
        var target = URLReference.resolve(context.location, against: context.requestURL)
        guard let from = Self.parse(context.requestURL), let rule = rules.rule(for: from.host) else {
            return RedirectOutcome(decision: .pass(location: nil), target: target, reason: "no_rule")
        }
        var rewritten = false
        for rewrite in rule.rewrites where target.hasPrefix(rewrite.from) {
            target = rewrite.to + target.dropFirst(rewrite.from.count)
            rewritten = true
            break
        }
        let passed = RedirectDecision.pass(location: rewritten ? target : nil)
        let to = Self.parse(target)
        if from.scheme == "https", to?.scheme == "http" || target.lowercased().hasPrefix("http:"), !rule.allowDowngrade {
            return RedirectOutcome(decision: .refuse(.redirectFailed(reason: .downgradeRefused(location: target))),
                                   target: target, reason: "downgrade")
        }
        guard rule.follow else { return RedirectOutcome(decision: passed, target: target, reason: "not_following") }
        guard let to else { return RedirectOutcome(decision: passed, target: target, reason: "unsupported_location") }
        if !rule.allowCrossHost && (to.host != from.host || to.port != from.port) {
            return RedirectOutcome(decision: passed, target: target, reason: "cross_host")
        }
        let keepsBody = RedirectStatus.method(after: context.status, from: context.method) == context.method
        if context.hasBody && keepsBody && !context.bodyIsReplayable {
            return RedirectOutcome(decision: passed, target: target, reason: "body_not_replayable")
        }
        if context.visitedURLs.contains(target) {
            return RedirectOutcome(decision: .refuse(.redirectFailed(reason: .loop(url: target))), target: target, reason: "loop")
        }
        if context.redirectsFollowed >= rule.maxHops {
            return RedirectOutcome(decision: .refuse(.redirectFailed(reason: .limitExceeded(maxHops: rule.maxHops))),
                                   target: target, reason: "limit")
        }
        return RedirectOutcome(decision: .follow(url: target), target: target, reason: "rule")
    }

    /// scheme, host and effective port of an absolute http(s) URL; nil for anything else.
    static func parse(_ url: String) -> (scheme: String, host: String, port: Int, path: String)? {
        guard case .absolute(let scheme, let host, let port, let path)? = RequestTarget.parseAbsolute(url),
              scheme == "http" || scheme == "https" else { return nil }
        return (scheme, host, port ?? (scheme == "https" ? 443 : 80), path)
    }
}
