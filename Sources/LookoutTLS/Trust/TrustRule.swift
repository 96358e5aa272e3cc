/// How to evaluate server trust for a set of host patterns.
public struct TrustRule: Sendable {
    /// A label for logs and events; defaults to "rules[i]" / "default" when nil.
    public var name: String?
    /// Host patterns (see `HostPattern`); ignored for the default rule.
    public var hosts: [String]
    /// The evaluator; several evaluators are expressed with `CompositeTrustEvaluator`.
    public var evaluator: any ServerTrustEvaluator
    /// Enforce failures, or only report them.
    public var mode: TrustMode
    /// When the rule's pins stop being enforced (Unix seconds; pins are enforced while
    /// now < pinsExpire). After it, a pin mismatch is reported but not enforced, as
    /// Android's network security config treats an expired `<pin-set>`; other failures
    /// stay enforced.
    public var pinsExpire: Int64?
    /// The client certificate offered to these hosts when they ask for one (mTLS).
    public var clientIdentity: ClientIdentity?

    /// A rule for `hosts`.
    public init(name: String? = nil, hosts: [String], evaluator: any ServerTrustEvaluator,
                mode: TrustMode = .enforce, pinsExpire: Int64? = nil, clientIdentity: ClientIdentity? = nil) {
        self.name = name
        self.hosts = hosts
        self.evaluator = evaluator
        self.mode = mode
        self.pinsExpire = pinsExpire
        self.clientIdentity = clientIdentity
    }
}
