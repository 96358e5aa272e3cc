import Lookout
import HTTPTypes
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// `headers.rules`: each hop's request and each response edited by the rule of the host it goes
/// to or came from. Shared by every exchange (it keeps no state of its own).
final class HeaderRulesStage: ExchangeStage, Sendable {
    private let rules: HostRuleSet<HeaderRule>

    init(rules: HostRuleSet<HeaderRule>) {
        self.rules = rules
    }

    func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext) {
        guard let match = rules.match(for: request.origin.ruleKey), !match.rule.request.isEmpty else { return }
        request.rule = match.rule.name
        request.changes = match.rule.request.apply(to: &request.head.headerFields)
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        if let match = rules.match(for: response.origin.ruleKey), !match.rule.response.isEmpty {
            let changes = match.rule.response.apply(to: &response.fields)
            exchange.emit(RequestDidAdaptResponse(rule: match.rule.name, changes: changes))
        }
        return .proceed
    }
}
