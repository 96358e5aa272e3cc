/// Chooses the trust rule for a host and evaluates presented chains with it.
///
/// Rules are matched most-specific first: an exact host, then `*.domain` (one label), then
/// `**.domain` (any depth ≥ 1), then `**`, and finally the default rule. Among patterns of
/// the same kind a longer domain wins (`**.api.example.com` before `**.example.com`); ties go
/// to the earlier rule. Immutable and thread-safe.
public final class ServerTrustManager: Sendable {
    /// The rules, as given.
    public let rules: [TrustRule]
    /// The rule for hosts no pattern matches.
    public let defaultRule: TrustRule
    /// Each rule's index, by its host patterns.
    private let ruleIndexes: HostRuleSet<Int>

    /// A manager for `rules` falling back to `defaultRule`; throws `invalid_host` for a
    /// malformed pattern.
    public init(rules: [TrustRule], defaultRule: TrustRule) throws(CertificateError) {
        var indexed: [(hosts: [HostPattern], rule: Int)] = []
        for (index, rule) in rules.enumerated() {
            var hosts: [HostPattern] = []
            for host in rule.hosts { hosts.append(try HostPattern(host)) }
            indexed.append((hosts, index))
        }
        self.ruleIndexes = HostRuleSet(indexed)
        self.rules = rules
        self.defaultRule = defaultRule
    }

    /// The rule for `host`.
    public func rule(for host: String) -> TrustRuleMatch {
        if let match = ruleIndexes.match(for: host) {
            return TrustRuleMatch(index: match.rule, pattern: match.pattern, rule: rules[match.rule])
        }
        return TrustRuleMatch(index: nil, pattern: nil, rule: defaultRule)
    }

    /// Evaluates `chain` (leaf first) for `host` at `now` (Unix seconds) with the matching rule.
    /// `stapledOCSPResponse` is the DER response the server stapled, for revocation checks.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64,
                         stapledOCSPResponse: [UInt8]? = nil) -> ServerTrustEvaluationResult {
        let match = rule(for: host)
        let rule = match.rule
        var failure: TrustEvaluationError?
        var profile: TrustProfile?
        do {
            profile = try rule.evaluator.evaluateUnderProfile(chain, host: host, now: now, stapledOCSPResponse: stapledOCSPResponse)
        } catch {
            failure = error
            profile = error.profile
        }
        let pinsExpired = rule.pinsExpire.map { now >= $0 } ?? false
        var enforced = rule.mode == .enforce
        if let failure, failure.reason == .pinMismatch, pinsExpired {
            enforced = false
        }
        return ServerTrustEvaluationResult(
            ruleIndex: match.index,
            ruleName: match.ruleName,
            matchedPattern: match.pattern?.text,
            evaluatorName: rule.evaluator.name,
            passed: failure == nil,
            error: failure,
            presentedPins: chain.map(\.spkiSHA256Pin),
            enforced: enforced,
            mode: rule.mode,
            pinsExpired: pinsExpired,
            profile: profile)
    }

    /// Evaluates at the current time.
    public func evaluate(_ chain: [Certificate], host: String,
                         stapledOCSPResponse: [UInt8]? = nil) -> ServerTrustEvaluationResult {
        evaluate(chain, host: host, now: UnixTime.now(), stapledOCSPResponse: stapledOCSPResponse)
    }
}
