import LookoutTLS

/// Per-host rules matched like trust rules: an exact host first, then `*.domain`, then
/// `**.domain` (more labels first), then `**`; ties go to the rule listed first.
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

    /// The most specific rule whose pattern matches `host`, if any.
    public func rule(for host: String) -> Rule? {
        for entry in entries where entry.pattern.matches(host) { return entry.rule }
        return nil
    }
}
