/// One member of the `Cache-Status` field (RFC 9211 §2), e.g. `Lookout; hit; ttl=87` or
/// `Lookout; fwd=stale; fwd-status=304; stored`.
public struct CacheStatus: Sendable, Equatable {
    /// Why the request went forward to the origin (§2.2).
    public enum Forward: String, Sendable {
        case bypass, method, miss, request, stale
        case uriMiss = "uri-miss"
        case varyMiss = "vary-miss"
    }

    public var hit = false
    public var forward: Forward?
    public var forwardStatus: Int?
    /// Remaining freshness in seconds; negative when stale (§2.4).
    public var ttl: Int?
    public var stored = false
    public var collapsed = false
    /// Free text for what the parameters above cannot say (§2.8), a token here.
    public var detail: String?

    public init(hit: Bool = false, forward: Forward? = nil, forwardStatus: Int? = nil, ttl: Int? = nil,
                stored: Bool = false, collapsed: Bool = false, detail: String? = nil) {
        self.hit = hit
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.ttl = ttl
        self.stored = stored
        self.collapsed = collapsed
        self.detail = detail
    }

    /// The list member, named after this cache.
    public func fieldValue(cacheName: String = "Lookout") -> String {
        // The commonest member, a 200 forwarded on a miss, as a constant (no string is built).
        if cacheName == "Lookout", !hit, forward == .uriMiss, forwardStatus == 200, ttl == nil, !collapsed, detail == nil {
            return stored ? "Lookout; fwd=uri-miss; fwd-status=200; stored" : "Lookout; fwd=uri-miss; fwd-status=200"
        }
        var value = cacheName
        value.reserveCapacity(64)
        if hit { value += "; hit" }
        if let forward { value += "; fwd="; value += forward.rawValue }
        if let forwardStatus { value += "; fwd-status="; value += String(forwardStatus) }
        if let ttl { value += "; ttl="; value += String(ttl) }
        if stored { value += "; stored" }
        if collapsed { value += "; collapsed" }
        if let detail { value += "; detail="; value += detail }
        return value
    }
}
