import CLookoutSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard server-certificate validation (RFC 5280 §6 path validation, RFC 6125 host
/// identity), done by OpenSSL's `X509_verify_cert`.
///
/// The presented chain after the leaf is offered as untrusted intermediates; the path must
/// end at an anchor of `trustStore`. The leaf must name the host (a DNS name, or an IP
/// address SAN for IP literals; partial wildcards such as `f*.example.com` are refused), be
/// fit for TLS server authentication, and every certificate must be valid at `now`.
public struct DefaultTrustEvaluator: ServerTrustEvaluator {
    /// The trust anchors.
    public let trustStore: TrustStore
    /// Whether the leaf must name the host; turning it off is for tests and private PKIs.
    public let validatesHost: Bool

    /// An evaluator against `trustStore`.
    public init(trustStore: TrustStore, validatesHost: Bool = true) {
        self.trustStore = trustStore
        self.validatesHost = validatesHost
    }

    /// "default".
    public var name: String { "default" }

    /// Verifies the chain; see the type's documentation.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {
        guard let leaf = chain.first else {
            throw TrustEvaluationError(reason: .noCertificates, message: "the server presented no certificate", evaluator: name)
        }
        OpenSSLErrorQueue.clear()
        guard let untrusted = lookout_sk_X509_new_null() else {
            throw TrustEvaluationError(reason: .invalidChain, message: OpenSSLErrorQueue.message("sk_X509_new_null failed"), evaluator: name)
        }
        // The stack borrows the certificates; `chain` keeps them alive until the end.
        defer { lookout_sk_X509_free(untrusted) }
        for certificate in chain.dropFirst() {
            _ = lookout_sk_X509_push(untrusted, certificate.x509)
        }
        guard let context = X509_STORE_CTX_new() else {
            throw TrustEvaluationError(reason: .invalidChain, message: OpenSSLErrorQueue.message("X509_STORE_CTX_new failed"), evaluator: name)
        }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, trustStore.store, leaf.x509, untrusted) == 1 else {
            throw TrustEvaluationError(reason: .invalidChain, message: OpenSSLErrorQueue.message("X509_STORE_CTX_init failed"), evaluator: name)
        }
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_time(parameters, time_t(now))
        _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER)
        _ = X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT))
        X509_VERIFY_PARAM_set_auth_level(parameters, 2)
        if validatesHost {
            let normalized = HostName.normalize(host)
            let accepted: Int32
            if HostName.isIPAddress(normalized) {
                accepted = X509_VERIFY_PARAM_set1_ip_asc(parameters, normalized)
            } else {
                X509_VERIFY_PARAM_set_hostflags(parameters, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT))
                accepted = X509_VERIFY_PARAM_set1_host(parameters, normalized, 0)
            }
            guard accepted == 1 else {
                throw TrustEvaluationError(reason: .hostnameMismatch, message: "\"\(host)\" is not a valid host name or IP address", evaluator: name)
            }
        }
        let result = withExtendedLifetime(chain) { X509_verify_cert(context) }
        if result == 1 {
            OpenSSLErrorQueue.clear()
            try checkProfile(context, host: host)
            return
        }
        let code = X509_STORE_CTX_get_error(context)
        let depth = X509_STORE_CTX_get_error_depth(context)
        let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
        var message = "certificate verify failed: \(text) (X509_V_ERR \(code), depth \(depth))"
        if code == X509_V_ERR_HOSTNAME_MISMATCH || code == X509_V_ERR_IP_ADDRESS_MISMATCH {
            let names = leaf.subjectAlternativeNames.map(\.description).joined(separator: ", ")
            message += "; host \(host), certificate names: \(names.isEmpty ? leaf.subject : names)"
        }
        let queued = OpenSSLErrorQueue.drain()
        if result < 0, !queued.isEmpty {
            message += "; " + queued.joined(separator: "; ")
        }
        throw TrustEvaluationError(reason: Self.reason(for: code), message: message, verifyErrorCode: code, evaluator: name)
    }

    /// The Web PKI rules OpenSSL does not check, on the path it built (`WebPKIProfile`).
    private func checkProfile(_ context: OpaquePointer, host: String) throws(TrustEvaluationError) {
        guard validatesHost, let built = X509_STORE_CTX_get0_chain(context) else { return }
        var path: [Certificate] = []
        for index in 0..<lookout_sk_X509_num(built) {
            if let x509 = lookout_sk_X509_value(built, index) { path.append(Certificate(retaining: x509)) }
        }
        do {
            try WebPKIProfile.check(path, host: host) { trustStore.systemAnchors.contains($0.derBytes) }
        } catch {
            throw TrustEvaluationError(reason: error.reason, message: "certificate profile: \(error.message)", evaluator: name)
        }
    }

    /// Maps an `X509_V_ERR_*` code to a reason.
    static func reason(for code: Int32) -> TrustEvaluationError.Reason {
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            return .expired
        case X509_V_ERR_CERT_NOT_YET_VALID:
            return .notYetValid
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH, X509_V_ERR_EMAIL_MISMATCH:
            return .hostnameMismatch
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
            return .selfSigned
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
             X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_CERT_UNTRUSTED,
             X509_V_ERR_CERT_REJECTED, X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            return .untrustedRoot
        case X509_V_ERR_CERT_REVOKED:
            return .revoked
        default:
            return .invalidChain
        }
    }
}
