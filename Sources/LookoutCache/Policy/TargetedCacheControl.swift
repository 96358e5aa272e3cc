import HTTPTypes
import LookoutHTTP

extension HTTPField.Name {
    /// RFC 9213 §3.
    public static let cdnCacheControl = HTTPField.Name("CDN-Cache-Control")!
}

extension CacheControl {
    /// The directives of the response's `CDN-Cache-Control` (RFC 9213), the targeted field a
    /// shared cache in front of origins obeys; nil when it is absent, empty or not a valid
    /// Structured Field Dictionary, and the cache then falls back to `Cache-Control` and `Expires`
    /// (§2.1). When present, it replaces both: the result has `isTargeted` set, which makes
    /// `Freshness` ignore `Expires`.
    ///
    /// Directives have their RFC 9111 meaning (§2.1). One whose value has the wrong type is
    /// treated as `Cache-Control` treats an invalid argument: a freshness directive makes the
    /// response stale (recorded in `conflicts`), any other is ignored.
    public static func targeted(_ fields: HTTPFields) -> CacheControl? {
        let lines = fields[values: .cdnCacheControl]
        guard !lines.isEmpty, let members = StructuredFieldDictionary.parse(lines), !members.isEmpty else { return nil }
        var directives = CacheControl()
        directives.isTargeted = true
        for (key, value) in members { directives.applyTargeted(key, value) }
        return directives
    }

    private mutating func applyTargeted(_ key: String, _ value: StructuredFieldDictionary.Item) {
        switch key {
        case "max-age": maxAge = targetedSeconds(key, value)
        case "s-maxage": sMaxAge = targetedSeconds(key, value)
        case "stale-while-revalidate": staleWhileRevalidate = targetedSeconds(key, value)
        case "stale-if-error": staleIfError = targetedSeconds(key, value)
        case "no-cache", "private":
            // Boolean true is the unqualified form; a String names fields, as the quoted
            // argument does in Cache-Control (RFC 9111 §5.2.2.4, §5.2.2.7).
            switch value {
            case .boolean(true): apply(key, nil)
            case .string(let list): apply(key, list)
            default: break
            }
        default:
            // The other directives take no argument: Boolean true is the bare name.
            if value == .boolean(true) { apply(key, nil) }
        }
    }

    /// A non-negative Integer; anything else is invalid (stale). Large values saturate at 2^31 as
    /// delta-seconds do (RFC 9111 §1.2.2).
    private mutating func targetedSeconds(_ key: String, _ value: StructuredFieldDictionary.Item) -> Int? {
        guard case .integer(let seconds) = value, seconds >= 0 else {
            conflicts.insert(key)
            return nil
        }
        return Int(min(seconds, 2_147_483_648))
    }
}
