import HTTPTypes
import LookoutHTTP

/// Freshness lifetime (RFC 9111 §4.2.1, §4.2.2) and age (§4.2.3) of a response, in seconds.
public enum Freshness {
    /// Heuristic freshness never exceeds this (§4.2.2 leaves the bound to the cache; a day keeps a
    /// debugging proxy from serving year-old guesses).
    public static let heuristicCap = 86_400.0
    /// The fraction of the time since `Last-Modified` given as heuristic freshness (§4.2.2: "typically … no more than some fraction"; 10 %).
    public static let heuristicFraction = 0.1

    /// Statuses that are heuristically cacheable (RFC 9110 §15.1).
    public static let heuristicallyCacheableStatuses: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Where a lifetime came from, for `Cache-Status` and the log.
    public enum Source: String, Sendable {
        case sMaxAge = "s-maxage", maxAge = "max-age", expires, heuristic, defaultTTL = "default_ttl", none
    }

    /// The freshness lifetime of a response received at `responseTime` (§4.2.1): `s-maxage`, then
    /// `max-age`, then `Expires` − `Date`; otherwise `defaultTTL` seconds when above 0, otherwise
    /// the heuristic, for statuses that allow it. An invalid or conflicting `max-age`/`s-maxage`,
    /// and an `Expires` that is invalid or given twice differently, make the response stale
    /// (lifetime 0), as §4.2.1 and §5.3 allow.
    public static func lifetime(status: Int, fields: HTTPFields, directives: CacheControl,
                                responseTime: Double, defaultTTL: Int) -> (seconds: Double, source: Source) {
        if directives.conflicts.contains("s-maxage") { return (0, .sMaxAge) }
        if let sMaxAge = directives.sMaxAge { return (Double(sMaxAge), .sMaxAge) }
        if directives.conflicts.contains("max-age") { return (0, .maxAge) }
        if let maxAge = directives.maxAge { return (Double(maxAge), .maxAge) }
        // RFC 9213 §2.1: a targeted field replaces Expires too.
        let expiresLines = directives.isTargeted ? [] : fields[values: .expires]
        if !expiresLines.isEmpty {
            // §5.3: an invalid date, e.g. "0", means already expired.
            guard Set(expiresLines).count == 1, let expires = HTTPDate.unixSeconds(expiresLines[0]) else {
                return (0, .expires)
            }
            let date = dateValue(fields) ?? responseTime
            return (max(0, expires - date), .expires)
        }
        if defaultTTL > 0 { return (Double(defaultTTL), .defaultTTL) }
        guard heuristicallyCacheableStatuses.contains(status) || directives.isPublic,
              let lastModifiedText = fields[.lastModified],
              let lastModified = HTTPDate.unixSeconds(lastModifiedText) else { return (0, .none) }
        let date = dateValue(fields) ?? responseTime
        return (min(heuristicCap, max(0, (date - lastModified) * heuristicFraction)), .heuristic)
    }

    /// True when the response carries explicit freshness (§3: `max-age`, `s-maxage`, `Expires`).
    public static func hasExplicitFreshness(_ fields: HTTPFields, _ directives: CacheControl) -> Bool {
        directives.maxAge != nil || directives.sMaxAge != nil || (!directives.isTargeted && fields[.expires] != nil)
            || directives.conflicts.contains("max-age") || directives.conflicts.contains("s-maxage")
    }

    /// The `Date` field as seconds since 1970, if valid.
    public static func dateValue(_ fields: HTTPFields) -> Double? {
        fields[.date].flatMap(HTTPDate.unixSeconds)
    }

    /// The `Age` field (§5.1): the first member of a list; ignored (0) when invalid.
    public static func ageValue(_ fields: HTTPFields) -> Double {
        guard let text = fields[.age] else { return 0 }
        let first = text.split(separator: ",", maxSplits: 1).first.map { String($0.trimmingOWS()) }
        return CacheControl.deltaSeconds(first).map(Double.init) ?? 0
    }

    /// The age a response received at `responseTime` for a request sent at `requestTime` has at
    /// `now` (§4.2.3): the corrected initial age plus the time it has been resident.
    public static func currentAge(fields: HTTPFields, requestTime: Double, responseTime: Double, now: Double) -> Double {
        let dateValue = dateValue(fields) ?? responseTime
        let apparentAge = max(0, responseTime - dateValue)
        let responseDelay = max(0, responseTime - requestTime)
        let correctedAgeValue = ageValue(fields) + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now - responseTime)
        return correctedInitialAge + residentTime
    }
}

/// What a stored response's freshness depends on, worked out once per stored copy (its fields do
/// not change until a 304 replaces them) instead of on every hit.
public struct FreshnessFacts: Sendable {
    /// The directives and lifetimes one reading of the response's fields gives.
    public struct Reading: Sendable {
        public let directives: CacheControl
        /// From `s-maxage`, `max-age` or `Expires` (0 when one is invalid); nil when none is given.
        public let explicitLifetime: Double?
        /// §4.2.2's heuristic (0 where none is allowed).
        public let heuristicLifetime: Double

        init(_ m: StoredMetadata, _ directives: CacheControl) {
            self.directives = directives
            let (seconds, source) = Freshness.lifetime(status: m.status, fields: m.fields, directives: directives,
                                                       responseTime: m.responseTime, defaultTTL: 0)
            switch source {
            case .sMaxAge, .maxAge, .expires:
                explicitLifetime = seconds
                heuristicLifetime = 0
            case .heuristic, .defaultTTL, .none:
                explicitLifetime = nil
                heuristicLifetime = seconds
            }
        }

        /// The lifetime with a rule's `default_ttl` (which replaces only the heuristic).
        public func lifetime(defaultTTL: Int) -> Double {
            explicitLifetime ?? (defaultTTL > 0 ? Double(defaultTTL) : heuristicLifetime)
        }
    }

    /// By `Cache-Control` and `Expires`.
    public let standard: Reading
    /// By a valid `CDN-Cache-Control` (RFC 9213), when the response has one.
    public let targeted: Reading?
    /// §4.2.3's corrected initial age, at `responseTime`.
    public let correctedInitialAge: Double
    public let responseTime: Double

    public init(_ m: StoredMetadata) {
        standard = Reading(m, CacheControl(m.fields))
        targeted = CacheControl.targeted(m.fields).map { Reading(m, $0) }
        correctedInitialAge = Freshness.currentAge(fields: m.fields, requestTime: m.requestTime,
                                                   responseTime: m.responseTime, now: m.responseTime)
        responseTime = m.responseTime
    }

    /// The reading a cache rule applies: the targeted one unless the rule turns it off.
    public func reading(targeted useTargeted: Bool) -> Reading {
        useTargeted ? (targeted ?? standard) : standard
    }

    public func age(now: Double) -> Double {
        correctedInitialAge + max(0, now - responseTime)
    }
}
