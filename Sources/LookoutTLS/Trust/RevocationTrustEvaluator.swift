import CLookoutSSL
#if canImport(Glibc)
import Glibc
#endif

/// Revocation checking of the leaf certificate: passes only on a positive "not revoked" answer.
///
/// The answer comes from the OCSP response the server stapled (RFC 6960, RFC 6066 §8), which
/// must be signed by the leaf's issuer or a responder it authorised, cover the leaf, be fresh
/// and say "good"; and from the given CRLs (RFC 5280 §5) when one of them is the issuer's,
/// which must be validly signed and current, and must not list the leaf. With neither a
/// stapled response nor a CRL from the issuer there is no answer, and the evaluation fails
/// with `revocation_unavailable`: a check that passes when it learns nothing would not be one.
/// Lookout never fetches OCSP or CRLs over the network itself.
///
/// This checks revocation only; combine it with `DefaultTrustEvaluator` in a
/// `CompositeTrustEvaluator` to also require a valid chain.
public struct RevocationTrustEvaluator: ServerTrustEvaluator {
    /// Where the leaf's issuer (and the OCSP responder's chain) may be found besides the chain.
    public let trustStore: TrustStore
    /// Certificate revocation lists, used for the leaf when one is from its issuer.
    public let revocationLists: [CertificateRevocationList]

    /// An evaluator over `trustStore` and optional CRLs.
    public init(trustStore: TrustStore, revocationLists: [CertificateRevocationList] = []) {
        self.trustStore = trustStore
        self.revocationLists = revocationLists
    }

    /// "revocation".
    public var name: String { "revocation" }

    /// Without a stapled response only the CRLs can answer.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {
        try evaluate(chain, host: host, now: now, stapledOCSPResponse: nil)
    }

    /// Passes when the stapled response or a CRL says the leaf is not revoked, and neither says it is.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64,
                         stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError) {
        guard let leaf = chain.first else {
            throw failure(.noCertificates, "the server presented no certificate")
        }
        guard let issuer = issuer(of: leaf, among: Array(chain.dropFirst()) + trustStore.anchors) else {
            throw failure(.revocationUnavailable, "the issuer of \(leaf.subject) is neither in the chain nor a trusted root, so its revocation cannot be checked")
        }
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        var answered = false
        if try checkRevocationLists(leaf: leaf, issuer: issuer, now: now) {
            answered = true
        }
        if let stapledOCSPResponse {
            try checkStapledResponse(stapledOCSPResponse, leaf: leaf, issuer: issuer, chain: chain)
            answered = true
        }
        if !answered {
            throw failure(.revocationUnavailable, revocationLists.isEmpty
                ? "the server stapled no OCSP response"
                : "the server stapled no OCSP response and no crl_files entry is from \(leaf.issuer)")
        }
    }

    // MARK: - CRLs

    /// True when a CRL from the leaf's issuer was consulted (and did not list the leaf).
    private func checkRevocationLists(leaf: Certificate, issuer: Certificate, now: Int64) throws(TrustEvaluationError) -> Bool {
        let issuerName = X509_get_issuer_name(leaf.x509)
        var time = time_t(now)
        for list in revocationLists where X509_NAME_cmp(X509_CRL_get_issuer(list.crl), issuerName) == 0 {
            guard let key = X509_get0_pubkey(issuer.x509), X509_CRL_verify(list.crl, key) == 1 else {
                throw failure(.revocationUnavailable, "the CRL from \(list.issuer) does not verify with the issuer's key")
            }
            if let nextUpdate = X509_CRL_get0_nextUpdate(list.crl), X509_cmp_time(nextUpdate, &time) < 0 {
                throw failure(.revocationUnavailable, "the CRL from \(list.issuer) is out of date (nextUpdate passed)")
            }
            var entry: OpaquePointer? = nil
            if X509_CRL_get0_by_cert(list.crl, &entry, leaf.x509) == 1 {
                throw failure(.revoked, "the CRL from \(list.issuer) lists \(leaf.subject) (serial \(leaf.serialNumberHex)) as revoked")
            }
            return true
        }
        return false
    }

    // MARK: - Stapled OCSP

    private func checkStapledResponse(_ der: [UInt8], leaf: Certificate, issuer: Certificate,
                                      chain: [Certificate]) throws(TrustEvaluationError) {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
        }
        guard let response = parsed else {
            throw failure(.revocationUnavailable, OpenSSLErrorQueue.message("the stapled OCSP response does not decode"))
        }
        defer { OCSP_RESPONSE_free(response) }
        let status = OCSP_response_status(response)
        guard status == OCSP_RESPONSE_STATUS_SUCCESSFUL else {
            let text = OCSP_response_status_str(Int(status)).map { String(cString: $0) } ?? "\(status)"
            throw failure(.revocationUnavailable, "the stapled OCSP response has status \"\(text)\"")
        }
        guard let basic = OCSP_response_get1_basic(response) else {
            throw failure(.revocationUnavailable, OpenSSLErrorQueue.message("the stapled OCSP response has no basic response"))
        }
        defer { OCSP_BASICRESP_free(basic) }
        guard let untrusted = lookout_sk_X509_new_null() else {
            throw failure(.revocationUnavailable, "sk_X509_new_null failed")
        }
        defer { lookout_sk_X509_free(untrusted) }
        for certificate in chain {
            _ = lookout_sk_X509_push(untrusted, certificate.x509)
        }
        let verified = withExtendedLifetime(chain) { OCSP_basic_verify(basic, untrusted, trustStore.store, 0) }
        guard verified == 1 else {
            throw failure(.revocationUnavailable, OpenSSLErrorQueue.message("the stapled OCSP response's signature does not verify"))
        }
        guard let certificateID = OCSP_cert_to_id(nil, leaf.x509, issuer.x509) else {
            throw failure(.revocationUnavailable, OpenSSLErrorQueue.message("OCSP_cert_to_id failed"))
        }
        defer { OCSP_CERTID_free(certificateID) }
        var certificateStatus: Int32 = -1
        var reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        guard OCSP_resp_find_status(basic, certificateID, &certificateStatus, &reason,
                                    &revokedAt, &thisUpdate, &nextUpdate) == 1 else {
            throw failure(.revocationUnavailable, "the stapled OCSP response does not cover \(leaf.subject)")
        }
        // Five minutes of clock skew, as `openssl ocsp` allows by default.
        guard OCSP_check_validity(thisUpdate, nextUpdate, 300, -1) == 1 else {
            throw failure(.revocationUnavailable, OpenSSLErrorQueue.message("the stapled OCSP response is not current"))
        }
        switch certificateStatus {
        case V_OCSP_CERTSTATUS_GOOD:
            return
        case V_OCSP_CERTSTATUS_REVOKED:
            let why = reason >= 0 ? OCSP_crl_reason_str(Int(reason)).map { String(cString: $0) } : nil
            throw failure(.revoked, "the stapled OCSP response says \(leaf.subject) is revoked\(why.map { " (\($0))" } ?? "")")
        default:
            throw failure(.revocationUnavailable, "the stapled OCSP response says the status of \(leaf.subject) is unknown")
        }
    }

    // MARK: - Helpers

    private func issuer(of leaf: Certificate, among candidates: [Certificate]) -> Certificate? {
        candidates.first { X509_check_issued($0.x509, leaf.x509) == X509_V_OK }
    }

    private func failure(_ reason: TrustEvaluationError.Reason, _ message: String) -> TrustEvaluationError {
        TrustEvaluationError(reason: reason, message: message, evaluator: name)
    }
}
