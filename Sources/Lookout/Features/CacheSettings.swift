import LookoutCache
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// Where the shared cache keeps its store, its bounds, and what it may store per host.
public struct CacheSettings: Sendable {
    /// The store's directory (created if missing).
    public var directory: String
    public var limits: CacheLimits
    /// `cache.rules` (hosts no rule names are cached).
    public var rules: HostRuleSet<CacheDecision>

    public init(directory: String, limits: CacheLimits = CacheLimits(), rules: HostRuleSet<CacheDecision> = .empty) {
        self.directory = directory
        self.limits = limits
        self.rules = rules
    }
}
