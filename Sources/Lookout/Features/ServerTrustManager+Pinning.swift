import LookoutTLS
import LookoutModel
import LookoutUpstream

extension ServerTrustManager {
    /// The name of the rule that pins `host` (public keys or certificates, enforced, pins not
    /// expired), or nil. Such a host cannot be checked through a blind tunnel.
    func pinningRuleName(for host: String, now: Int64 = UnixTime.now()) -> String? {
        let match = rule(for: host)
        let rule = match.rule
        guard rule.mode == .enforce, Self.pins(rule.evaluator) else { return nil }
        if let expiry = rule.pinsExpire, now >= expiry { return nil }
        return match.ruleName
    }

    private static func pins(_ evaluator: any ServerTrustEvaluator) -> Bool {
        switch evaluator {
        case is PublicKeysTrustEvaluator, is PinnedCertificatesTrustEvaluator:
            return true
        case let composite as CompositeTrustEvaluator:
            return composite.evaluators.contains { pins($0) }
        default:
            return false
        }
    }
}
