import Lookout
import LookoutModel
import LookoutTLS

/// `audit.enabled`: each response head, with its request and the upstream TLS, goes through the
/// passive checks; what they find is an `audit.finding` record and a `findings` entry in the
/// summary, less the ids turned off (`audit.disable`, and per host `audit.rules`). Shared by
/// every exchange; holds nothing.
final class AuditStage: ExchangeStage, @unchecked Sendable {  // immutable
    private let disabled: Set<String>
    private let rules: HostRuleSet<Set<String>>
    private let expiryDays: Int

    init(disabled: Set<String>, rules: HostRuleSet<Set<String>>, certificateExpiryDays: Int) {
        self.disabled = disabled
        self.rules = rules
        self.expiryDays = certificateExpiryDays
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        let input = PassiveAudit.Input(url: exchange.facts.url, requestFields: exchange.requestHead.headerFields,
                                       responseFields: response.fields, tls: exchange.facts.upstreamTLS, now: UnixTime.now(),
                                       certificateExpiryDays: expiryDays)
        let off = rules.match(for: exchange.facts.clientKey)?.rule
        let findings = PassiveAudit.findings(input).filter { !disabled.contains($0.id) && !(off?.contains($0.id) ?? false) }
        guard !findings.isEmpty else { return .proceed }
        for finding in findings { exchange.emit(AuditDidFind(finding: finding)) }
        exchange.record(.findings(findings))
        return .proceed
    }
}
