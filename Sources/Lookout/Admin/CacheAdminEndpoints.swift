import HTTPTypes
import LookoutHTTP
import LookoutCache
import LookoutModel
import LookoutUpstream

/// The cache's admin endpoints, for `lookout cache …` against a running proxy:
/// `GET /cache/stats`, `GET /cache/list[?host=H]`, `POST /cache/purge?url=U`, `POST /cache/clear`.
/// Answers are JSON. The two that change the store need the proxy's credentials when `auth.users`
/// is set (`Proxy-Authorization`, as for proxied requests).
enum CacheAdminEndpoints {
    struct Answer {
        let status: Int
        let json: String
    }

    static func answer(method: HTTPRequest.Method, path: String, query: String?, fields: HTTPFields,
                       admin: AdminContext) -> Answer? {
        guard path.hasPrefix("/cache/") else { return nil }
        guard let cache = admin.cache else {
            return Answer(status: 404, json: #"{"error":"the cache is off (cache.enabled: false)"}"#)
        }
        let parameters = FormURLEncoding.parameters(query)
        switch (method, path) {
        case (.get, "/cache/stats"):
            return Answer(status: 200, json: statsJSON(cache))
        case (.get, "/cache/list"):
            return Answer(status: 200, json: CacheListing.json(cache.store.list(), host: parameters["host"]))
        case (.post, "/cache/purge"), (.post, "/cache/clear"):
            if let authenticator = admin.authenticator, !authenticator.accepts(fields) {
                return Answer(status: 407, json: #"{"error":"proxy credentials required (auth.users)"}"#)
            }
            if path == "/cache/clear" {
                return Answer(status: 200, json: #"{"removed":\#(cache.store.removeAll())}"#)
            }
            guard let url = parameters["url"], !url.isEmpty else {
                return Answer(status: 400, json: #"{"error":"purge needs ?url=<the absolute URL>"}"#)
            }
            return Answer(status: 200, json: #"{"removed":\#(cache.store.remove(url: url))}"#)
        case (_, "/cache/stats"), (_, "/cache/list"), (_, "/cache/purge"), (_, "/cache/clear"):
            return Answer(status: 405, json: #"{"error":"method not allowed"}"#)
        default:
            return nil
        }
    }

    static func statsJSON(_ cache: SharedCache) -> String {
        let s = cache.store.statistics
        let figures: [(String, String)] = [
            ("objects", "\(s.objects)"), ("bytes", "\(s.bytes)"),
            ("memory_objects", "\(s.memoryObjects)"), ("memory_bytes", "\(s.memoryBytes)"),
            ("max_size_bytes", "\(cache.store.limits.maxSizeBytes)"),
            ("hits", "\(cache.hits.load(ordering: .relaxed))"),
            ("stale_served", "\(cache.staleServed.load(ordering: .relaxed))"),
            ("revalidated", "\(cache.revalidations.load(ordering: .relaxed))"),
            ("collapsed", "\(cache.collapsed.load(ordering: .relaxed))"),
            ("misses", "\(cache.misses.load(ordering: .relaxed))"),
            ("bypassed", "\(cache.bypasses.load(ordering: .relaxed))"),
            ("stored", "\(cache.stores.load(ordering: .relaxed))"),
            ("hit_ratio", String(Double(Int(cache.hitRatio * 10_000)) / 10_000)),
        ]
        return "{" + figures.map { "\"\($0)\":\($1)" }.joined(separator: ",") + "}"
    }


}

/// `lookout cache list` / `GET /cache/list`: the stored objects as a JSON array, by URL.
public enum CacheListing {
    public static func json(_ listings: [CacheStore.Listing], host: String?) -> String {
        let rows = listings
            .filter { host == nil || Self.host(of: $0.url) == host!.lowercased() }
            .sorted { $0.url < $1.url }
            .map { #"{"url":\#(JSONText.quoted($0.url)),"status":\#($0.status),"bytes":\#($0.bytes),"stored_at":\#(Int($0.responseTime))}"# }
        return "[" + rows.joined(separator: ",") + "]"
    }

    /// The host of an absolute URL, lowercased, without port or brackets.
    static func host(of url: String) -> String? {
        guard let start = url.firstRange(of: "://")?.upperBound else { return nil }
        var authority = url[start...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") { return authority.dropFirst().prefix { $0 != "]" }.lowercased() }
        return authority.prefix { $0 != ":" }.lowercased()
    }
}
