import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What the shared cache may do with a host's responses, like Alamofire's
/// `CachedResponseHandler` (cache / do not cache / modify). RFC 9111 still decides what is
/// storable; this can only forbid storing or give a default freshness.
public enum CacheDecision: Sendable, Equatable {
    /// Store what RFC 9111 allows, with heuristic freshness where nothing explicit is given.
    case cache
    /// Never store (serving stays RFC-correct: there is nothing to serve).
    case doNotCache
    /// Store what RFC 9111 allows, giving storable responses without explicit freshness
    /// `defaultTTL` seconds (`cache.rules[i].default_ttl`); `cdnCacheControl` false ignores
    /// `CDN-Cache-Control` (`cache.rules[i].cdn_cache_control`).
    case modify(defaultTTL: Int, cdnCacheControl: Bool)

    public var defaultTTL: Int {
        if case .modify(let seconds, _) = self { return seconds }
        return 0
    }

    /// Whether a valid `CDN-Cache-Control` replaces `Cache-Control` and `Expires` (RFC 9213 §2.1).
    public var readsCDNCacheControl: Bool {
        if case .modify(_, let reads) = self { return reads }
        return true
    }
}

/// Decides per host what the shared cache may store.
public protocol CachedResponseHandler: Sendable {
    /// The decision for `host`, and the rule that gave it (nil for the default).
    func decision(for host: HostRuleKey) -> (decision: CacheDecision, rule: String?)
}

/// The configured policy: `cache.rules`, most specific first; hosts no rule names are cached.
public struct ResponseCacher: CachedResponseHandler {
    public let rules: HostRuleSet<CacheDecision>

    public init(rules: HostRuleSet<CacheDecision>) {
        self.rules = rules
    }

    /// Stores what RFC 9111 allows, for every host.
    public static let cache = ResponseCacher(rules: .empty)

    public func decision(for host: HostRuleKey) -> (decision: CacheDecision, rule: String?) {
        guard let match = rules.match(for: host) else { return (.cache, nil) }
        return (match.rule, match.pattern.text)
    }
}
