import LookoutTLS

/// What the trust rule decided about one upstream certificate chain: which rule and evaluator
/// judged it, the outcome, and the pins of what was presented, so users can write pins from the log.
public struct TrustDecision: Sendable {
    public enum Outcome: String, Sendable {
        /// Every evaluator accepted the chain.
        case passed
        /// Refused: the connection was closed and the client told why.
        case failed
        /// A violation let through (report-only rule, or pins past their expiry date).
        case reported
    }

    public var host: String
    /// The rule's name, else its first host pattern, else "default".
    public var rule: String
    /// "default", "public-keys", "composite(default, public-keys)", …
    public var evaluator: String
    public var outcome: Outcome
    /// The failure's stable code ("pin_mismatch", "expired", …) when it did not pass.
    public var reason: String?
    public var message: String?
    /// `sha256/…` SPKI pins of the presented chain, leaf first.
    public var presentedPins: [String]
    public var enforced: Bool
    /// The certificate profile that judged the chain ("webpki", "rfc5280"); nil when no default
    /// evaluator ran.
    public var profile: String?

    public init(host: String, rule: String, evaluator: String, outcome: Outcome, reason: String? = nil,
                message: String? = nil, presentedPins: [String], enforced: Bool, profile: String? = nil) {
        self.host = host
        self.rule = rule
        self.evaluator = evaluator
        self.outcome = outcome
        self.reason = reason
        self.message = message
        self.presentedPins = presentedPins
        self.enforced = enforced
        self.profile = profile
    }
}

/// The TLS side of one upstream connection, as recorded in `TransactionMetrics`.
public struct UpstreamTLSDetails: Sendable {
    /// "TLSv1.3".
    public var version: String
    public var cipher: String
    /// The SNI sent (absent for IP literals).
    public var serverName: String?
    /// The ALPN protocol agreed on, if any.
    public var applicationProtocol: String?
    /// Whether the handshake resumed an earlier session.
    public var resumed: Bool
    public var trust: TrustDecision
    /// The origin asked for a client certificate (a CertificateRequest) in this handshake.
    /// JA4S of the origin's ServerHello.
    public var ja4s: String?
    /// When the origin's certificate expires (Unix seconds), for the audit's expiry finding.
    public var leafNotAfter: Int64?
    public var clientCertificateRequested = false
    /// The client certificate sent in answer (`trust.rules[i].client_certificate`).
    public var clientCertificate: ClientCertificate?

    /// The leaf of a client certificate sent, as the log names it.
    public struct ClientCertificate: Sendable {
        public var subject: String
        public var sha256: String

        public init(subject: String, sha256: String) {
            self.subject = subject
            self.sha256 = sha256
        }
    }

    public init(version: String, cipher: String, serverName: String?, applicationProtocol: String?, resumed: Bool,
                trust: TrustDecision) {
        self.version = version
        self.cipher = cipher
        self.serverName = serverName
        self.applicationProtocol = applicationProtocol
        self.resumed = resumed
        self.trust = trust
    }
}

extension TrustDecision {
    /// The decision a `ServerTrustManager` evaluation amounts to.
    public init(host: String, evaluation: ServerTrustEvaluationResult) {
        let outcome: Outcome = evaluation.passed ? .passed : (evaluation.enforced ? .failed : .reported)
        self.init(host: host, rule: evaluation.ruleName, evaluator: evaluation.evaluatorName, outcome: outcome,
                  reason: evaluation.error?.reason.rawValue, message: evaluation.error?.message,
                  presentedPins: evaluation.presentedPins, enforced: evaluation.enforced,
                  profile: evaluation.profile?.rawValue)
    }
}
