import LookoutModel
import LookoutTLS
import Yams

/// `audit`: passive security findings about what passes.
extension LookoutConfiguration {
    public struct Audit: Sendable, Equatable {
        /// `enabled`: look at every exchange's headers and TLS.
        public var enabled = false
        /// `disable`: finding ids turned off everywhere.
        public var disable: [String] = []
        /// `rules`: per host, more ids turned off.
        public var rules: [AuditRuleSettings] = []
        /// `certificate_expiry_days`: an origin certificate expiring sooner is a finding.
        public var certificateExpiryDays = 21
        public init() {}
    }
}

/// One `audit.rules[i]`.
public struct AuditRuleSettings: Sendable, Equatable {
    public var hosts: [HostPattern] = []
    public var disable: [String] = []
    public init() {}
}

extension ConfigReader {
    func readAudit(_ section: [String: Node], into audit: inout LookoutConfiguration.Audit) {
        if let node = section["enabled"] { audit.enabled = boolean(node, "audit.enabled") ?? audit.enabled }
        if let node = section["disable"] { audit.disable = findingIDs(node, path: "audit.disable") }
        if let node = section["certificate_expiry_days"] {
            audit.certificateExpiryDays = integer(node, "audit.certificate_expiry_days", in: 0...3650,
                                                  rangeMessage: "must be between 0 and 3650") ?? audit.certificateExpiryDays
        }
        if let node = section["rules"] {
            let rules = ruleList(node, path: "audit.rules", known: Schema.auditRule, what: "audit rules") { section, elementPath in
                var rule = AuditRuleSettings()
                if let node = section["disable"] { rule.disable = findingIDs(node, path: "\(elementPath).disable") }
                return rule
            } hosts: { $0.hosts = $1 }
            audit.rules = rules ?? audit.rules
        }
    }

    /// A list of finding ids, each one Lookout knows (a typo would silently turn nothing off).
    private func findingIDs(_ node: Node, path: String) -> [String] {
        (stringList(node, path: path, expected: "finding ids") ?? []).compactMap { text, itemNode, itemPath in
            guard AuditFindingCatalog.ids.contains(text) else {
                fail(itemNode, itemPath, "unknown finding \(quoted(text)) (findings: \(AuditFindingCatalog.ids.joined(separator: ", ")))")
                return nil
            }
            return text
        }
    }
}
