import HTTPTypes

/// Whether a shared cache may store a response (RFC 9111 §3), and why not.
public enum StoragePolicy {
    /// Why a response was not stored; the raw value is the log's `reason`.
    public enum Refusal: String, Sendable, Equatable, Error {
        /// Only GET responses are stored (HEAD is answered from them).
        case method
        /// Not a final status this cache stores: 1xx, 206 (partial content is never stored as
        /// complete), 304 (it updates a stored response instead).
        case status
        case requestNoStore = "request_no_store"
        case noStore = "no_store"
        /// `must-understand` with a status this cache does not implement (§5.2.2.3).
        case mustUnderstand = "must_understand"
        case `private`
        /// The request carried `Authorization` and the response allows no shared reuse (§3.5).
        case authorization
        /// No explicit freshness, no heuristic allowed, and no validator to revalidate with.
        case noFreshness = "no_freshness"
        /// `Vary: *` never matches a later request (§4.1).
        case varyStar = "vary_star"
        /// The body carries a transfer coding Lookout relays without decoding (RFC 9112 §6.3):
        /// stored without its `Transfer-Encoding` it would be served as something else.
        case transferCoding = "transfer_coding"
        /// Larger than `max_object_bytes`.
        case tooLarge = "too_large"
        /// A `cache.rules` entry says `store: false` for the host.
        case rule
        /// The body ended early or the store failed.
        case incomplete
        case writeFailed = "write_failed"
    }

    /// Statuses whose caching semantics this cache implements, for `must-understand` (§5.2.2.3).
    public static let understoodStatuses: Set<Int> = [200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501]

    /// §3 for a shared cache. `freshnessLifetime` is what `Freshness.lifetime` gave the response.
    public static func refusal(method: HTTPRequest.Method, requestFields: HTTPFields, requestDirectives: CacheControl,
                               status: Int, responseFields: HTTPFields, responseDirectives: CacheControl,
                               freshnessLifetime: Double) -> Refusal? {
        guard method == .get else { return .method }
        guard status >= 200, status != 206, status != 304 else { return .status }
        if requestDirectives.noStore { return .requestNoStore }
        if responseDirectives.mustUnderstand {
            // A cache that understands the status may store it, ignoring no-store.
            guard understoodStatuses.contains(status) else { return .mustUnderstand }
        } else if responseDirectives.noStore {
            return .noStore
        }
        if responseDirectives.isPrivate && responseDirectives.privateFields.isEmpty { return .private }
        if requestFields[.authorization] != nil,
           !(responseDirectives.isPublic || responseDirectives.sMaxAge != nil || responseDirectives.mustRevalidate) {
            return .authorization
        }
        if VaryKey.names(responseFields) == nil { return .varyStar }
        let explicit = Freshness.hasExplicitFreshness(responseFields, responseDirectives)
        let heuristic = Freshness.heuristicallyCacheableStatuses.contains(status) || responseDirectives.isPublic
        guard explicit || heuristic else { return .noFreshness }
        // Stored with no freshness it could only ever be fetched again: worth it only with a validator.
        if freshnessLifetime <= 0 && responseFields[.eTag] == nil && responseFields[.lastModified] == nil {
            return .noFreshness
        }
        return nil
    }
}
