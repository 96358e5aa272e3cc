import HTTPTypes

/// Whether a stored response may answer a request without contacting the origin (RFC 9111 §4,
/// §4.2.4, §5.2.1; RFC 5861), and why not.
public enum ReusePolicy {
    public enum Decision: Equatable, Sendable {
        /// Fresh: serve it.
        case fresh
        /// Stale, but the client accepts it (`max-stale`): serve it.
        case staleAccepted
        /// Stale within `stale-while-revalidate`: serve it and revalidate in the background.
        case staleWhileRevalidate
        /// Must be validated with the origin first; the reason is the log's `reason`.
        case validate(Reason)
    }

    public enum Reason: String, Sendable {
        case stale
        case requestNoCache = "request_no_cache"
        case responseNoCache = "response_no_cache"
        case requestMaxAge = "request_max_age"
        case requestMinFresh = "request_min_fresh"
        /// Stale, and `must-revalidate`, `proxy-revalidate` or `s-maxage` forbid serving it so.
        case mustRevalidate = "must_revalidate"
    }

    /// Whether the request's directives ask for a fresh copy (`no-cache`, or HTTP/1.0's
    /// `Pragma: no-cache` when the request has no `Cache-Control`, §5.4).
    public static func requestForbidsStored(_ fields: HTTPFields, _ directives: CacheControl) -> Bool {
        if directives.noCache { return true }
        guard fields[.cacheControl] == nil, let pragma = fields[.pragma] else { return false }
        return CacheControl.directives(in: pragma).contains { $0.0 == "no-cache" }
    }

    /// The decision for a stored response of `age` and `lifetime` seconds.
    public static func decide(age: Double, lifetime: Double, response: CacheControl,
                              requestFields: HTTPFields, request: CacheControl) -> Decision {
        if requestForbidsStored(requestFields, request) { return .validate(.requestNoCache) }
        if response.noCache && response.noCacheFields.isEmpty { return .validate(.responseNoCache) }
        if let maxAge = request.maxAge, age > Double(maxAge) { return .validate(.requestMaxAge) }
        let remaining = lifetime - age
        if let minFresh = request.minFresh, remaining < Double(minFresh) { return .validate(.requestMinFresh) }
        if remaining > 0 { return .fresh }
        if forbidsStale(response) { return .validate(.mustRevalidate) }
        let staleness = -remaining
        if let maxStale = request.maxStale, maxStale == Int.max || staleness <= Double(maxStale) { return .staleAccepted }
        if let window = response.staleWhileRevalidate, staleness <= Double(window) { return .staleWhileRevalidate }
        return .validate(.stale)
    }

    /// §4.2.4: these directives forbid generating a stale response, even on error.
    public static func forbidsStale(_ response: CacheControl) -> Bool {
        response.mustRevalidate || response.proxyRevalidate || response.sMaxAge != nil
            || response.conflicts.contains("s-maxage")
    }

    /// RFC 5861 §4: a stale response may answer when validation failed (an error or a 5xx)
    /// within `stale-if-error` seconds of staleness, from the response or the request.
    public static func mayServeStaleOnError(staleness: Double, response: CacheControl, request: CacheControl) -> Bool {
        guard !forbidsStale(response), !request.noCache else { return false }
        let window = max(response.staleIfError ?? -1, request.staleIfError ?? -1)
        return window >= 0 && staleness <= Double(window)
    }
}
