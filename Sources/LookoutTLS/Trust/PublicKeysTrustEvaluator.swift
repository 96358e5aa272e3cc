/// Public-key pinning (as in OkHttp's CertificatePinner and RFC 7469): passes when the
/// SubjectPublicKeyInfo SHA-256 of any certificate in the presented chain equals one of the
/// pins. Several pins express backup keys.
///
/// This checks pins only; combine it with `DefaultTrustEvaluator` in a
/// `CompositeTrustEvaluator` to also require a valid chain.
public struct PublicKeysTrustEvaluator: ServerTrustEvaluator {
    /// The accepted pins.
    public let pins: [PublicKeyPin]

    /// An evaluator accepting any of `pins`.
    public init(pins: [PublicKeyPin]) {
        self.pins = pins
    }

    /// "public-keys".
    public var name: String { "public-keys" }

    /// Passes when a presented certificate's key matches a pin.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {
        guard !chain.isEmpty else {
            throw TrustEvaluationError(reason: .noCertificates, message: "the server presented no certificate", evaluator: name)
        }
        let accepted = Set(pins)
        let presented = chain.map(\.publicKeyPin)
        if presented.contains(where: accepted.contains) { return }
        throw TrustEvaluationError(
            reason: .pinMismatch,
            message: "no certificate of \(host)'s chain matches a pinned key; presented [\(presented.map(\.description).joined(separator: ", "))], pinned [\(pins.map(\.description).joined(separator: ", "))]",
            evaluator: name)
    }
}
