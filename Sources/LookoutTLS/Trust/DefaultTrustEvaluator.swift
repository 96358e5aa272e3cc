import CLookoutSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard server-certificate validation (RFC 5280 §6 path validation, RFC 6125 host
/// identity), done by OpenSSL's `X509_verify_cert`, under a certificate profile.
///
/// The presented chain after the leaf is offered as untrusted intermediates; the path must
/// end at an anchor of `trustStore`. The leaf must name the host (a DNS name, or an IP
/// address SAN for IP literals; partial wildcards such as `f*.example.com` are refused), be
/// fit for TLS server authentication, and every certificate must be valid at `now`.
///
/// The profile (`TrustProfile`) is `profile` when set; otherwise it follows the anchor the path
/// ends at, as browsers do: `webpki` for a system-bundle root, `rfc5280` for a root the user
/// added with `ca_files`.
public struct DefaultTrustEvaluator: ServerTrustEvaluator {
    /// The trust anchors.
    public let trustStore: TrustStore
    /// Whether the leaf must name the host; turning it off is for tests and private PKIs.
    public let validatesHost: Bool
    /// The profile every chain is judged under; nil to choose it by the path's anchor.
    public let profile: TrustProfile?

    /// An evaluator against `trustStore`.
    public init(trustStore: TrustStore, validatesHost: Bool = true, profile: TrustProfile? = nil) {
        self.trustStore = trustStore
        self.validatesHost = validatesHost
        self.profile = profile
    }

    /// "default".
    public var name: String { "default" }

    /// Verifies the chain; see the type's documentation.
    public func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {
        _ = try evaluateUnderProfile(chain, host: host, now: now, stapledOCSPResponse: nil)
    }

    /// Verifies the chain and returns the profile that judged it.
    public func evaluateUnderProfile(_ chain: [Certificate], host: String, now: Int64,
                                     stapledOCSPResponse: [UInt8]?) throws(TrustEvaluationError) -> TrustProfile? {
        guard !chain.isEmpty else {
            throw TrustEvaluationError(reason: .noCertificates, message: "the server presented no certificate", evaluator: name)
        }
        // Known before validation when set, or when the store's anchors are all of one kind.
        let known = profile ?? (!trustStore.hasUserAnchors ? .webpki : trustStore.systemAnchors.isEmpty ? .rfc5280 : nil)
        if let known {
            let path = try validatePathBacktracking(chain, host: host, now: now, profile: known)
            try checkProfile(known, path: path, host: host)
            return known
        }
        // Both kinds of anchor: validate under the looser rules, then judge by where the path ended
        // (again under the Web PKI's for a system root, whose chains that profile governs).
        let path = try validatePathBacktracking(chain, host: host, now: now, profile: nil)
        guard let anchor = path.last, trustStore.isSystemAnchor(anchor) else {
            try checkProfile(.rfc5280, path: path, host: host)
            return .rfc5280
        }
        let strictPath = try validatePathBacktracking(chain, host: host, now: now, profile: .webpki)
        try checkProfile(.webpki, path: strictPath, host: host)
        return .webpki
    }

    /// `validatePath`, backtracking over alternative intermediates. OpenSSL builds one path and
    /// does not try another issuer when it fails; RFC 4158 §2.4.2 path building does. When the
    /// chain offers several intermediates with one subject (a cross-signed CA), a failure is
    /// retried without each of them in turn, so a path through the other issuer is found.
    private func validatePathBacktracking(_ chain: [Certificate], host: String, now: Int64,
                                          profile: TrustProfile?) throws(TrustEvaluationError) -> [Certificate] {
        do {
            return try validatePath(chain, host: host, now: now, profile: profile)
        } catch {
            let intermediates = chain.dropFirst()
            let subjects = intermediates.map(\.subject)
            let alternatives = intermediates.indices.filter { index in
                subjects.filter { $0 == chain[index].subject }.count > 1
            }
            for index in alternatives.prefix(8) {
                var without = chain
                without.remove(at: index)
                if let path = try? validatePath(without, host: host, now: now, profile: profile) { return path }
            }
            throw error
        }
    }

    /// OpenSSL's path validation with `X509_V_FLAG_X509_STRICT` (RFC 5280's certificate profile);
    /// the path it built, leaf first. Unless `profile` is `webpki`, a CA without keyUsage is
    /// accepted, as browsers accept it under roots a user installed (RFC 5280 §4.2.1.3 makes
    /// keyUsage a SHOULD for CAs; only a keyUsage that lacks keyCertSign forbids signing).
    /// A failure names `profile`, or when nil the profile of the anchor the partial path reached.
    private func validatePath(_ chain: [Certificate], host: String, now: Int64,
                              profile: TrustProfile?) throws(TrustEvaluationError) -> [Certificate] {
        let leaf = chain[0]
        OpenSSLErrorQueue.clear()
        guard let untrusted = lookout_sk_X509_new_null() else {
            throw failure(.invalidChain, OpenSSLErrorQueue.message("sk_X509_new_null failed"), profile)
        }
        // The stack borrows the certificates; `chain` keeps them alive until the end.
        defer { lookout_sk_X509_free(untrusted) }
        for certificate in chain.dropFirst() {
            _ = lookout_sk_X509_push(untrusted, certificate.x509)
        }
        guard let context = X509_STORE_CTX_new() else {
            throw failure(.invalidChain, OpenSSLErrorQueue.message("X509_STORE_CTX_new failed"), profile)
        }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, trustStore.store, leaf.x509, untrusted) == 1 else {
            throw failure(.invalidChain, OpenSSLErrorQueue.message("X509_STORE_CTX_init failed"), profile)
        }
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_time(parameters, time_t(now))
        _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER)
        _ = X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT))
        if profile == .webpki {
            X509_STORE_CTX_set_verify_cb(context) { ok, context in
                ok == 0 && DefaultTrustEvaluator.isLastSecond(context) ? 1 : ok
            }
        } else {
            X509_STORE_CTX_set_verify_cb(context) { ok, context in
                ok == 0 && DefaultTrustEvaluator.isWaivedUnderRFC5280(context) ? 1 : ok
            }
        }
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
                throw failure(.hostnameMismatch, "\"\(host)\" is not a valid host name or IP address", profile)
            }
        }
        let result = withExtendedLifetime(chain) { X509_verify_cert(context) }
        let built = builtPath(context)
        if result == 1 {
            OpenSSLErrorQueue.clear()
            return built
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
        let named = profile ?? (built.count > 1 && built.last.map(trustStore.isSystemAnchor) == true ? .webpki : .rfc5280)
        throw TrustEvaluationError(reason: Self.reason(for: code), message: message, verifyErrorCode: code,
                                   evaluator: name, profile: named)
    }

    /// The strict checks `rfc5280` waives, as browsers do for roots a user installed: a CA
    /// without keyUsage (RFC 5280 §4.2.1.3 makes it a SHOULD), and a trust anchor whose
    /// basicConstraints is not critical (easy-rsa's CAs; §6.1.1(d) takes the anchor as input,
    /// and Chromium accepts it). Plus the last second of validity (`isLastSecond`).
    static func isWaivedUnderRFC5280(_ context: OpaquePointer?) -> Bool {
        guard let context else { return false }
        switch X509_STORE_CTX_get_error(context) {
        case X509_V_ERR_CA_CERT_MISSING_KEY_USAGE:
            return true
        case X509_V_ERR_CA_BCONS_NOT_CRITICAL:
            guard let chain = X509_STORE_CTX_get0_chain(context) else { return false }
            return X509_STORE_CTX_get_error_depth(context) == lookout_sk_X509_num(chain) - 1
        default:
            return isLastSecond(context)
        }
    }

    /// Whether OpenSSL called a certificate expired at the very second of its notAfter, which
    /// RFC 5280 §4.1.2.5 counts as inside the validity period ("the date on which the validity
    /// period ends", inclusive); OpenSSL's comparison treats it as past.
    static func isLastSecond(_ context: OpaquePointer?) -> Bool {
        guard let context, X509_STORE_CTX_get_error(context) == X509_V_ERR_CERT_HAS_EXPIRED,
              let certificate = X509_STORE_CTX_get_current_cert(context),
              let notAfter = X509_get0_notAfter(certificate) else { return false }
        var justBefore = X509_VERIFY_PARAM_get_time(X509_STORE_CTX_get0_param(context)) - 1
        return X509_cmp_time(notAfter, &justBefore) > 0
    }

    private func builtPath(_ context: OpaquePointer) -> [Certificate] {
        guard let built = X509_STORE_CTX_get0_chain(context) else { return [] }
        var path: [Certificate] = []
        for index in 0..<lookout_sk_X509_num(built) {
            if let x509 = lookout_sk_X509_value(built, index) { path.append(Certificate(retaining: x509)) }
        }
        return path
    }

    /// The rules of `profile` OpenSSL does not check, on the path it built.
    private func checkProfile(_ profile: TrustProfile, path: [Certificate], host: String) throws(TrustEvaluationError) {
        guard validatesHost else { return }
        do {
            switch profile {
            case .webpki: try WebPKIProfile.check(path, host: host, isSystemAnchor: trustStore.isSystemAnchor)
            case .rfc5280: try RFC5280Profile.check(path, host: host)
            }
        } catch {
            throw TrustEvaluationError(reason: error.reason, message: "certificate profile \(profile.rawValue): \(error.message)",
                                       evaluator: name, profile: profile)
        }
    }

    private func failure(_ reason: TrustEvaluationError.Reason, _ message: String, _ profile: TrustProfile?) -> TrustEvaluationError {
        TrustEvaluationError(reason: reason, message: message, evaluator: name, profile: profile)
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
