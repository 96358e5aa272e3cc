/// Requires every member evaluator to pass.
///
/// All members are run, not only up to the first failure, and the error reported is the
/// first failure that is not a pin mismatch when there is one. So a pin mismatch never hides
/// a more basic failure such as an expired or untrusted chain — which matters because a pin
/// mismatch may go unenforced (expired pin sets), while the other failures are enforced.
public struct CompositeTrustEvaluator: ServerTrustEvaluator {
    /// The member evaluators, in order.
    public let evaluators: [any ServerTrustEvaluator]

    /// A composite of `evaluators`; an empty composite passes everything.
    public init(_ evaluators: [any ServerTrustEvaluator]) {
        self.evaluators = evaluators
    }

    /// "composite(default, public-keys)".
    public var name: String {
        "composite(\(evaluators.map(\.name).joined(separator: ", ")))"
    }

    /// Passes when every member passes.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {
        try evaluate(chain, host: host, now: now, stapledOCSPResponse: nil)
    }

    /// Passes when every member passes; the stapled response goes to each member.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64,
                         stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError) {
        _ = try evaluateUnderProfile(chain, host: host, now: now, stapledOCSPResponse: stapledOCSPResponse)
    }

    /// Passes when every member passes; the profile is the first member's that has one.
    public func evaluateUnderProfile(_ chain: [Certificate], host: String, now: Int64,
                                     stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError) -> TrustProfile? {
        var failures: [TrustEvaluationError] = []
        var profile: TrustProfile?
        for evaluator in evaluators {
            do {
                let judged = try evaluator.evaluateUnderProfile(chain, host: host, now: now, stapledOCSPResponse: stapledOCSPResponse)
                profile = profile ?? judged
            } catch {
                profile = profile ?? error.profile
                failures.append(error)
            }
        }
        guard let first = failures.first(where: { $0.reason != .pinMismatch }) ?? failures.first else { return profile }
        let others = failures.filter { $0 != first }
        guard !others.isEmpty else { throw first.underProfile(profile) }
        throw TrustEvaluationError(
            reason: first.reason,
            message: first.message + "; also " + others.map(\.description).joined(separator: "; "),
            verifyErrorCode: first.verifyErrorCode,
            evaluator: first.evaluator,
            profile: profile)
    }
}
