/// Certificate pinning: passes when any certificate in the presented chain is byte-for-byte
/// (DER) equal to one of the pinned certificates.
///
/// This checks pins only; combine it with `DefaultTrustEvaluator` in a
/// `CompositeTrustEvaluator` to also require a valid chain.
public struct PinnedCertificatesTrustEvaluator: ServerTrustEvaluator {
    /// The accepted certificates.
    public let certificates: [Certificate]

    /// An evaluator accepting any of `certificates`.
    public init(certificates: [Certificate]) {
        self.certificates = certificates
    }

    /// "pinned-certificates".
    public var name: String { "pinned-certificates" }

    /// Passes when a presented certificate equals a pinned one.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {
        guard !chain.isEmpty else {
            throw TrustEvaluationError(reason: .noCertificates, message: "the server presented no certificate", evaluator: name)
        }
        let pinned = Set(certificates)
        if chain.contains(where: pinned.contains) { return }
        throw TrustEvaluationError(
            reason: .pinMismatch,
            message: "no certificate of \(host)'s chain equals a pinned certificate; presented [\(chain.map(\.sha256Fingerprint).joined(separator: ", "))]",
            evaluator: name)
    }
}
