import HTTPTypes
import LookoutCache

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
                       session: Session) -> Answer? {
        guard path.hasPrefix("/cache/") else { return nil }
        guard let cache = session.cache else {
            return Answer(status: 404, json: #"{"error":"the cache is off (cache.enabled: false)"}"#)
        }
        let parameters = Self.parameters(query)
        switch (method, path) {
        case (.get, "/cache/stats"):
            return Answer(status: 200, json: statsJSON(cache))
        case (.get, "/cache/list"):
            return Answer(status: 200, json: CacheListing.json(cache.store.list(), host: parameters["host"]))
        case (.post, "/cache/purge"), (.post, "/cache/clear"):
            if let authenticator = session.authenticator, !authenticator.accepts(fields) {
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

    fileprivate static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// `a=b&c=d`, percent-decoded (`+` is a space).
    static func parameters(_ query: String?) -> [String: String] {
        var result: [String: String] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecoded(parts[0]) else { continue }
            result[name] = parts.count > 1 ? percentDecoded(parts[1]) : ""
        }
        return result
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            let byte = utf8[i]
            if byte == UInt8(ascii: "%") {
                let h = utf8.index(after: i)
                guard h < utf8.endIndex, utf8.index(after: h) < utf8.endIndex,
                      let value = UInt8(String(decoding: [utf8[h], utf8[utf8.index(after: h)]], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                i = utf8.index(h, offsetBy: 2)
                continue
            }
            bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            i = utf8.index(after: i)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// `lookout cache list` / `GET /cache/list`: the stored objects as a JSON array, by URL.
public enum CacheListing {
    public static func json(_ listings: [CacheStore.Listing], host: String?) -> String {
        let rows = listings
            .filter { host == nil || Self.host(of: $0.url) == host!.lowercased() }
            .sorted { $0.url < $1.url }
            .map { #"{"url":\#(CacheAdminEndpoints.quoted($0.url)),"status":\#($0.status),"bytes":\#($0.bytes),"stored_at":\#(Int($0.responseTime))}"# }
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
