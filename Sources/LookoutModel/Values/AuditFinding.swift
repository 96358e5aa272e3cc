/// One passive security finding about an exchange (`audit`): a stable id, how bad it is, the
/// weakness it is an instance of (its CWE number) and what showed it, with secrets redacted.
public struct AuditFinding: Sendable, Equatable {
    public enum Severity: String, Sendable { case high, medium, low, info }

    public var id: String
    public var severity: Severity
    public var cwe: Int
    public var evidence: String

    public init(id: String, severity: Severity, cwe: Int, evidence: String) {
        self.id = id
        self.severity = severity
        self.cwe = cwe
        self.evidence = evidence
    }
}

/// `audit.finding`: a finding about this exchange (its summary's `findings` lists them all).
public struct AuditDidFind: EventKind {
    public static let name = "audit.finding"
    public var finding: AuditFinding

    public init(finding: AuditFinding) {
        self.finding = finding
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("finding", finding.id)
        writer.field("severity", finding.severity.rawValue)
        writer.field("cwe", finding.cwe)
        writer.field("evidence", finding.evidence)
    }
}
