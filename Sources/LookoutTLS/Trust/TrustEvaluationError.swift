/// Why a server's certificate chain was not trusted.
public struct TrustEvaluationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The failure category; the raw values are the stable snake_case codes used in error
    /// responses, events and logs.
    public enum Reason: String, Sendable, Equatable, CaseIterable {
        /// No certificate in the chain matched a pinned key or pinned certificate.
        case pinMismatch = "pin_mismatch"
        /// A certificate in the chain is past its notAfter (RFC 5280 §4.1.2.5).
        case expired = "expired"
        /// A certificate in the chain is before its notBefore.
        case notYetValid = "not_yet_valid"
        /// The leaf does not name the host (RFC 6125 §6; RFC 5280 §4.2.1.6 for IP addresses).
        case hostnameMismatch = "hostname_mismatch"
        /// The chain does not lead to a trust anchor in the trust store.
        case untrustedRoot = "untrusted_root"
        /// The leaf is self-signed and not itself trusted.
        case selfSigned = "self_signed"
        /// A certificate in the chain is revoked.
        case revoked = "revoked"
        /// The revocation evaluator got no usable answer: no stapled OCSP response and no
        /// CRL for the issuer, or a response that is stale, unverifiable or "unknown".
        case revocationUnavailable = "revocation_unavailable"
        /// The chain is malformed: bad signature, wrong key usage or purpose, a non-CA issuer,
        /// path length exceeded, undecodable certificate, and similar.
        case invalidChain = "invalid_chain"
        /// The server presented no certificate.
        case noCertificates = "no_certificates"
    }

    /// The failure category.
    public let reason: Reason
    /// Human-readable detail; for chain verification it includes OpenSSL's verify error
    /// string (`X509_verify_cert_error_string`) and the depth it occurred at.
    public let message: String
    /// OpenSSL's `X509_V_ERR_*` code when chain verification failed, else nil.
    public let verifyErrorCode: Int32?
    /// The name of the evaluator that failed ("default", "public-keys", …).
    public let evaluator: String
    /// The certificate profile the chain was judged under, when a default evaluator judged it.
    public let profile: TrustProfile?

    /// Creates an error.
    public init(reason: Reason, message: String, verifyErrorCode: Int32? = nil, evaluator: String,
                profile: TrustProfile? = nil) {
        self.reason = reason
        self.message = message
        self.verifyErrorCode = verifyErrorCode
        self.evaluator = evaluator
        self.profile = profile
    }

    /// This error, naming `profile` when it names none.
    public func underProfile(_ profile: TrustProfile?) -> TrustEvaluationError {
        guard self.profile == nil, let profile else { return self }
        return TrustEvaluationError(reason: reason, message: message, verifyErrorCode: verifyErrorCode,
                                    evaluator: evaluator, profile: profile)
    }

    /// The snake_case code, e.g. "pin_mismatch".
    public var code: String { reason.rawValue }

    /// "pin_mismatch: … (public-keys)".
    public var description: String { "\(reason.rawValue): \(message) (\(evaluator))" }
}
