/// Trusts every chain, including an empty one. For development only: the integrator should
/// warn at start-up and on every use.
public struct DisabledTrustEvaluator: ServerTrustEvaluator {
    /// An evaluator that always passes.
    public init() {}

    /// "disabled".
    public var name: String { "disabled" }

    /// Always passes.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {}
}
