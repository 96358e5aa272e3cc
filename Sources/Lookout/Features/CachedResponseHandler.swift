/// What may be stored in the cache for a response.
public enum CacheDecision: String, Sendable {
    case doNotCache = "do_not_cache"
}

/// Decides what the shared cache may store, like Alamofire's `CachedResponseHandler`.
/// The session consults it only when a cache store is configured.
public protocol CachedResponseHandler: Sendable {
    func decision(forStatus status: Int, method: String, url: String) -> CacheDecision
}

/// The stock cache policies.
public struct ResponseCacher: CachedResponseHandler {
    private let behavior: CacheDecision

    /// Nothing is stored.
    public static let doNotCache = ResponseCacher(behavior: .doNotCache)

    public func decision(forStatus status: Int, method: String, url: String) -> CacheDecision {
        behavior
    }
}
