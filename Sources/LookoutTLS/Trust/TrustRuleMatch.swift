/// The rule `ServerTrustManager` chose for a host.
public struct TrustRuleMatch: Sendable {
    /// The rule's position in `ServerTrustManager.rules`; nil for the default rule.
    public let index: Int?
    /// The pattern that matched; nil for the default rule.
    public let pattern: HostPattern?
    /// The rule.
    public let rule: TrustRule

    /// The rule's name, or "rules[i]", or "default".
    public var ruleName: String {
        rule.name ?? index.map { "rules[\($0)]" } ?? "default"
    }
}
