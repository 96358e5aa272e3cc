import LookoutTLS

/// `cache`: the RFC 9111 shared cache and its store.
extension LookoutConfiguration {
    public struct Cache: Sendable, Equatable {
        /// `enabled`: off by default — a debugging proxy shows origin behaviour unless asked.
        public var enabled = false
        /// `path`: the store's directory; "" = `<state_dir>/cache`.
        public var path = ""
        /// `max_size_bytes`: the store on disk; least recently used objects are evicted beyond it.
        public var maxSizeBytes = 1_073_741_824
        /// `max_object_bytes`: larger responses are relayed, not stored.
        public var maxObjectBytes = 67_108_864
        /// `memory_bytes`: hot small objects are also kept in memory, up to this much.
        public var memoryBytes = 67_108_864
        /// `rules`: per host pattern, most specific first.
        public var rules: [CacheRuleSettings] = []
        public init() {}
    }
}

/// One `cache.rules[i]`, like the seeds' `CachedResponseHandler` for its hosts.
public struct CacheRuleSettings: Sendable, Equatable {
    public var hosts: [HostPattern] = []
    /// `store`: false = never store responses for these hosts.
    public var store = true
    /// `default_ttl`: seconds of freshness for storable responses without explicit freshness
    /// (0 = RFC 9111 §4.2.2 heuristics only).
    public var defaultTTL = 0
    /// `cdn_cache_control`: false = ignore `CDN-Cache-Control` (RFC 9213) and cache by
    /// `Cache-Control` and `Expires` alone.
    public var cdnCacheControl = true
    public init() {}
}
