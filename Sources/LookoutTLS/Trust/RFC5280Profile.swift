import CLookoutSSL

/// The checks `TrustProfile.rfc5280` adds to OpenSSL's path validation, on the path it built,
/// leaf first: RFC 5280's certificate profile where OpenSSL's `X509_V_FLAG_X509_STRICT` does not
/// reach it. `WebPKIProfile` applies these too, then the Baseline Requirements' own rules.
///
/// With the strict flag (less its missing-keyUsage check, see `DefaultTrustEvaluator`) OpenSSL
/// already refuses, under this profile, what browsers refuse for roots a user installed: a CA
/// whose keyUsage lacks keyCertSign (§4.2.1.3), a leaf whose extendedKeyUsage does not allow
/// serverAuth (§4.2.1.12), a non-CA issuer, an exceeded pathLenConstraint, names outside a CA's
/// nameConstraints, missing key identifiers (§4.2.1.1, §4.2.1.2), bad signatures and dates. It
/// accepts a CA without keyUsage and a leaf without extendedKeyUsage. The Baseline
/// Requirements' rules (serial entropy, key types and curves, validity length, a mandatory
/// extendedKeyUsage, key identifier forms, commonName copies) are not applied.
enum RFC5280Profile {
    /// Throws the first violation in `path` for `host`.
    static func check(_ path: [Certificate], host: String) throws(WebPKIProfile.Violation) {
        guard let leaf = path.first else { return }
        var excludedDNS: [String] = []
        for (depth, certificate) in path.enumerated() {
            let extensions = certificate.extensions
            // A self-issued anchor is trusted as its owner installed it (RFC 5280 §6.1.1 takes a
            // trust anchor as input, not as a certificate to validate); an anchor issued by
            // another CA (a cross-signed root, an intermediate in ca_files) still follows §4.
            let isAnchor = depth == path.count - 1 && depth > 0
            if !(isAnchor && certificate.isSelfIssued) {
                try checkCertificate(certificate, extensions, depth: depth)
            }
            if depth == 0 {
                // A leaf that is itself an anchor was trusted as it is by whoever added it.
                if path.count > 1 { try checkLeaf(certificate, extensions) }
            } else {
                excludedDNS += try WebPKIProfile.nameConstraints(extensions, depth: depth, requireCritical: true)
            }
        }
        // A wildcard names one label and nothing over a public suffix (RFC 9525 §6.3), as
        // browsers apply to every chain.
        try WebPKIProfile.checkWildcards(leaf, host: host, excludedDNS: excludedDNS)
    }

    /// RFC 5280 §4.1.2.2 serial numbers, §4.2.1.1 an authorityKeyIdentifier unless self-issued, §4.2.1.11 policyConstraints critical, §4.2.2.1
    /// authorityInfoAccess well formed.
    static func checkCertificate(_ certificate: Certificate, _ extensions: [CertificateExtension],
                                 depth: Int) throws(WebPKIProfile.Violation) {
        let at = "certificate \(depth) (\(certificate.subject))"
        let serial = certificate.serialNumberShape
        if serial.negative || serial.magnitudeBytes.isEmpty {
            throw WebPKIProfile.Violation("\(at): the serial number must be positive (RFC 5280 §4.1.2.2)")
        }
        if serial.magnitudeBytes.count + (serial.magnitudeBytes[0] & 0x80 != 0 ? 1 : 0) > 20 {
            throw WebPKIProfile.Violation("\(at): the serial number is longer than 20 octets (RFC 5280 §4.1.2.2)")
        }
        if !certificate.isSelfIssued, !extensions.contains(where: { $0.nid == NID_authority_key_identifier }) {
            throw WebPKIProfile.Violation("\(at): no authorityKeyIdentifier (RFC 5280 §4.2.1.1)")
        }
        if let constraints = extensions.first(where: { $0.nid == NID_policy_constraints }), !constraints.isCritical {
            throw WebPKIProfile.Violation("\(at): policyConstraints not marked critical (RFC 5280 §4.2.1.11)")
        }
        if let access = extensions.first(where: { $0.nid == NID_info_access }), !WebPKIProfile.isWellFormedAccess(access.value) {
            throw WebPKIProfile.Violation("\(at): a malformed authorityInfoAccess (RFC 5280 §4.2.2.1: one or more AccessDescriptions)")
        }
    }

    /// The leaf's RFC 5280 rules: keyCertSign only with cA (§4.2.1.3), nameConstraints only in
    /// CAs (§4.2.1.10), a subjectAltName of valid names, critical when the subject is empty (§4.2.1.6).
    static func checkLeaf(_ leaf: Certificate, _ extensions: [CertificateExtension]) throws(WebPKIProfile.Violation) {
        let flags = leaf.extensionFlags
        if flags.flags & UInt32(EXFLAG_KUSAGE) != 0, flags.keyUsage & UInt32(KU_KEY_CERT_SIGN) != 0,
           flags.flags & UInt32(EXFLAG_CA) == 0 {
            throw WebPKIProfile.Violation("the leaf asserts keyCertSign without basicConstraints cA (RFC 5280 §4.2.1.3)")
        }
        if extensions.contains(where: { $0.nid == NID_name_constraints }) {
            throw WebPKIProfile.Violation("the leaf has nameConstraints, which only CA certificates may carry (RFC 5280 §4.2.1.10)")
        }
        guard let san = extensions.first(where: { $0.nid == NID_subject_alt_name }) else {
            throw WebPKIProfile.Violation("the leaf has no subjectAltName", reason: .hostnameMismatch)
        }
        if !san.isCritical, leaf.hasEmptySubject {
            throw WebPKIProfile.Violation("subjectAltName is not critical although the subject is empty (RFC 5280 §4.2.1.6)")
        }
        for case .dnsName(let name) in leaf.subjectAlternativeNames where !WebPKIProfile.isValidPresentedName(name) {
            throw WebPKIProfile.Violation("the leaf names \"\(name)\", which is not a valid DNS name (RFC 5280 §4.2.1.6)")
        }
    }
}
