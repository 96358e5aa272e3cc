/// Decides whether a server's presented certificate chain is acceptable for a host, modelled
/// on Alamofire's `ServerTrustEvaluating`.
///
/// Evaluators see the chain exactly as the server sent it (leaf first) and the host the
/// client asked for; they are pure functions of those and of `now`, so they can be tested
/// with fixed clocks and shared freely between threads.
public protocol ServerTrustEvaluator: Sendable {
    /// The evaluator's configuration name: "default", "public-keys", "pinned-certificates",
    /// "composite(…)" or "disabled".
    var name: String { get }

    /// Throws when `chain` must not be trusted for `host` at time `now` (Unix seconds).
    /// `host` is a DNS name or an IPv4/IPv6 literal (IPv6 with or without brackets).
    func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError)

    /// The same, also given the OCSP response the server stapled (DER), if any. Only the
    /// revocation evaluator (and composites holding one) look at it.
    func evaluate(_ chain: [Certificate], host: String, now: Int64,
                  stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError)

    /// The same, returning the certificate profile that judged the chain (the default
    /// evaluator's, `TrustProfile`); nil for evaluators that apply none.
    func evaluateUnderProfile(_ chain: [Certificate], host: String, now: Int64,
                              stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError) -> TrustProfile?
}

extension ServerTrustEvaluator {
    /// Evaluators that do not use the stapled response ignore it.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64,
                         stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError) {
        try evaluate(chain, host: host, now: now)
    }

    /// Evaluators without a certificate profile report none.
    public func evaluateUnderProfile(_ chain: [Certificate], host: String, now: Int64,
                                     stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError) -> TrustProfile? {
        try evaluate(chain, host: host, now: now, stapledOCSPResponse: stapledOCSPResponse)
        return nil
    }

    /// Evaluates at the current time.
    public func evaluate(_ chain: [Certificate], host: String) throws(TrustEvaluationError) {
        try evaluate(chain, host: host, now: UnixTime.now())
    }
}
