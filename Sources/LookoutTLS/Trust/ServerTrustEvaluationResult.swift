/// The outcome of one server-trust evaluation, with everything an event or log record
/// needs (`task.didEvaluateServerTrust`).
public struct ServerTrustEvaluationResult: Sendable, CustomStringConvertible {
    /// The matched rule's position; nil for the default rule.
    public let ruleIndex: Int?
    /// The matched rule's name ("rules[i]" or "default" when it has none).
    public let ruleName: String
    /// The host pattern that matched; nil for the default rule.
    public let matchedPattern: String?
    /// The rule evaluator's name, e.g. "composite(default, public-keys)".
    public let evaluatorName: String
    /// Whether the evaluator passed.
    public let passed: Bool
    /// The failure, when it did not pass.
    public let error: TrustEvaluationError?
    /// The SPKI SHA-256 pin of each presented certificate, leaf first — so users can build
    /// pins from the log.
    public let presentedPins: [String]
    /// Whether the rule's verdict binds: false for report-only rules and for pin mismatches
    /// after the pin set expired.
    public let enforced: Bool
    /// The rule's mode.
    public let mode: TrustMode
    /// Whether the rule had pins with an expiry in the past.
    public let pinsExpired: Bool
    /// The certificate profile the default evaluator judged the chain under; nil without one.
    public let profile: TrustProfile?

    /// The failure reason, when it did not pass.
    public var reason: TrustEvaluationError.Reason? { error?.reason }

    /// Whether the connection may proceed: it passed, or the failure is not enforced.
    public var allowsConnection: Bool { passed || !enforced }

    /// Whether this is a failure to be reported without blocking (report-only, expired pins).
    public var isReportedViolation: Bool { !passed && !enforced }

    /// "rule api (pattern api.example.com) evaluator public-keys: pin_mismatch, enforced".
    public var description: String {
        let pattern = matchedPattern.map { " (pattern \($0))" } ?? ""
        let verdict = passed ? "passed" : (error.map { $0.reason.rawValue } ?? "failed")
        return "rule \(ruleName)\(pattern) evaluator \(evaluatorName): \(verdict), \(enforced ? "enforced" : "not enforced")"
    }
}
