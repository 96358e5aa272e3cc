/// Per-host rules matched most specific first: an exact host, then `*.domain` (one label), then
/// `**.domain` (any depth ≥ 1), then `**`. Among patterns of the same kind a longer domain wins
/// (`**.api.example.com` before `**.example.com`); ties go to the rule listed first. Trust rules,
/// redirect, retry, header, access and parent-proxy rules all match this way.
///
/// Matching is indexed, not a scan: the host is normalized once, then looked up whole (exact),
/// by its parent domain (one label) and by each of its suffixes, longest first (any depth) — a
/// handful of dictionary lookups however many rules there are (with 500 patterns a scan cost
/// 250 µs per request).
public struct HostRuleSet<Rule: Sendable>: Sendable {
    private let entries: [(pattern: HostPattern, rule: Rule)]
    /// Index into `entries` of the first rule per domain, by kind.
    private let exact: [String: Int]
    private let singleLabel: [String: Int]
    private let anyDepth: [String: Int]
    private let anyHost: Int?

    public init(_ rules: [(hosts: [HostPattern], rule: Rule)]) {
        let flat = rules.flatMap { entry in entry.hosts.map { (pattern: $0, rule: entry.rule) } }
        var exact: [String: Int] = [:]
        var singleLabel: [String: Int] = [:]
        var anyDepth: [String: Int] = [:]
        var anyHost: Int?
        for (index, entry) in flat.enumerated() {
            switch entry.pattern.kind {
            case .exact: if exact[entry.pattern.domain] == nil { exact[entry.pattern.domain] = index }
            case .singleLabelWildcard: if singleLabel[entry.pattern.domain] == nil { singleLabel[entry.pattern.domain] = index }
            case .anyDepthWildcard: if anyDepth[entry.pattern.domain] == nil { anyDepth[entry.pattern.domain] = index }
            case .any: if anyHost == nil { anyHost = index }
            }
        }
        self.entries = flat
        self.exact = exact
        self.singleLabel = singleLabel
        self.anyDepth = anyDepth
        self.anyHost = anyHost
    }

    public static var empty: HostRuleSet { HostRuleSet([]) }

    /// Whether any rule satisfies `predicate`.
    public func contains(where predicate: (Rule) -> Bool) -> Bool {
        entries.contains { predicate($0.rule) }
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// The most specific rule whose pattern matches `host`, with that pattern.
    public func match(for host: String) -> (pattern: HostPattern, rule: Rule)? {
        if entries.isEmpty { return nil }
        return match(for: HostRuleKey(host))
    }

    /// The same for a host already prepared (`HostRuleKey`), as an exchange does once for all
    /// the rule sets it consults.
    public func match(for key: HostRuleKey) -> (pattern: HostPattern, rule: Rule)? {
        if entries.isEmpty { return nil }
        if let canonical = key.canonicalAddress {
            // Wildcards never match an address; an exact pattern in any spelling of it does.
            if let index = exact[canonical] { return entries[index] }
            return anyHost.map { entries[$0] }
        }
        let normalized = key.normalized
        if let index = exact[normalized] { return entries[index] }
        if !normalized.hasPrefix("."), !normalized.contains("..") {
            if let dot = normalized.firstIndex(of: "."), dot != normalized.startIndex,
               let index = singleLabel[String(normalized[normalized.index(after: dot)...])] {
                return entries[index]
            }
            var rest = Substring(normalized)
            while let dot = rest.firstIndex(of: ".") {
                rest = rest[rest.index(after: dot)...]
                if let index = anyDepth[String(rest)] { return entries[index] }
            }
        }
        return anyHost.map { entries[$0] }
    }

    /// The most specific rule whose pattern matches `host`, if any.
    public func rule(for host: String) -> Rule? {
        match(for: host)?.rule
    }
}

/// A host prepared once for matching against any number of `HostRuleSet`s: normalized
/// (brackets, a trailing dot and case removed) and, for an IP literal, its canonical text.
public struct HostRuleKey: Sendable {
    public let normalized: String
    /// Non-nil for an IP literal.
    public let canonicalAddress: String?

    public init(_ host: String) {
        normalized = HostRuleKey.needsNormalizing(host) ? HostName.normalize(host) : host
        canonicalAddress = HostRuleKey.canonicalAddress(normalized)
    }

    /// Brackets, a trailing dot, or anything but lowercase ASCII: the usual host is none of these,
    /// and is matched as it is (one byte scan, no copy).
    private static func needsNormalizing(_ host: String) -> Bool {
        guard let first = host.utf8.first, first != UInt8(ascii: "["), host.utf8.last != UInt8(ascii: ".") else { return true }
        return host.utf8.contains { $0 >= 0x80 || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) }
    }

    /// The canonical text of an IP literal, or nil for a name. A name starts with a letter
    /// more often than not, which settles it without parsing; an IPv4 literal that `inet_pton`
    /// accepts is already canonical (dotted decimal, no leading zeros).
    private static func canonicalAddress(_ host: String) -> String? {
        guard let first = host.utf8.first else { return nil }
        let isDigit = first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")
        let hasColon = host.utf8.contains(UInt8(ascii: ":"))
        guard isDigit || hasColon else { return nil }
        if !hasColon { return HostName.isIPv4Literal(host) ? host : nil }
        return HostName.ipAddressBytes(host).flatMap(HostName.formatIPAddress)
    }
}
