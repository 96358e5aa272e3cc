/// Per-host rules matched most specific first: an exact host, then `*.domain` (one label), then
/// `**.domain` (any depth ≥ 1), then `**`. Among patterns of the same kind a longer domain wins
/// (`**.api.example.com` before `**.example.com`); ties go to the rule listed first. Trust rules,
/// redirect rules and retry rules all match this way.
public struct HostRuleSet<Rule: Sendable>: Sendable {
    private let entries: [(pattern: HostPattern, rule: Rule)]

    public init(_ rules: [(hosts: [HostPattern], rule: Rule)]) {
        let flat = rules.flatMap { entry in entry.hosts.map { (pattern: $0, rule: entry.rule) } }
        entries = flat.enumerated().sorted { a, b in
            let (pa, pb) = (a.element.pattern, b.element.pattern)
            if pa.kind != pb.kind { return pa.kind < pb.kind }
            if pa.domainLabelCount != pb.domainLabelCount { return pa.domainLabelCount > pb.domainLabelCount }
            return a.offset < b.offset
        }.map(\.element)
    }

    public static var empty: HostRuleSet { HostRuleSet([]) }

    public var isEmpty: Bool { entries.isEmpty }

    /// The most specific rule whose pattern matches `host`, with that pattern.
    public func match(for host: String) -> (pattern: HostPattern, rule: Rule)? {
        for entry in entries where entry.pattern.matches(host) { return entry }
        return nil
    }

    /// The most specific rule whose pattern matches `host`, if any.
    public func rule(for host: String) -> Rule? {
        match(for: host)?.rule
    }
}
