import CLookoutSSL

/// What OpenSSL's path validation (even with `X509_V_FLAG_X509_STRICT`) lets through and the
/// Web PKI forbids: the certificate profile of RFC 5280 and of the CA/Browser Forum Baseline
/// Requirements (BR §7.1), checked on the path OpenSSL built, leaf first.
///
/// Anchors from the system bundle are trusted as their root program published them (some
/// long-trusted roots predate these rules: a zero serial number, an authorityKeyIdentifier
/// with issuer and serial); every other certificate — intermediates, the leaf, and anchors a
/// user added with `ca_files` — is held to the profile.
enum WebPKIProfile {
    static let serverAuth: [UInt8] = [0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01]  // 1.3.6.1.5.5.7.3.1
    static let anyExtendedKeyUsage: [UInt8] = [0x55, 0x1D, 0x25, 0x00]  // 2.5.29.37.0
    static let allowedCurves: Set<String> = ["prime256v1", "P-256", "secp384r1", "P-384", "secp521r1", "P-521"]

    struct Violation: Error {
        let reason: TrustEvaluationError.Reason
        let message: String
        init(_ message: String, reason: TrustEvaluationError.Reason = .invalidChain) {
            self.reason = reason
            self.message = message
        }
    }

    /// Throws the first violation in `path` (leaf first, anchor last) for `host`.
    static func check(_ path: [Certificate], host: String, isSystemAnchor: (Certificate) -> Bool) throws(Violation) {
        guard let leaf = path.first else { return }
        var excludedDNS: [String] = []
        for (depth, certificate) in path.enumerated() {
            let isAnchor = depth == path.count - 1 && depth > 0
            if isAnchor && isSystemAnchor(certificate) { continue }
            let extensions = certificate.extensions
            try checkEveryCertificate(certificate, extensions, depth: depth, isRoot: isAnchor && certificate.isSelfIssued)
            if depth == 0 {
                // A leaf that is itself an anchor (a self-signed test server's certificate in
                // ca_files, often made with `openssl req -x509`: cA set, no extendedKeyUsage)
                // was trusted as it is by whoever added it.
                if path.count > 1 { try checkLeaf(certificate, extensions) }
            } else {
                excludedDNS += try nameConstraints(extensions, depth: depth, requireCritical: false)
            }
        }
        try checkWildcards(leaf, host: host, excludedDNS: excludedDNS)
    }

    /// RFC 5280's rules (`RFC5280Profile.checkCertificate`), BR §6.1.5 keys, and the key
    /// identifiers and root extensions of BR §7.1.2.
    static func checkEveryCertificate(_ certificate: Certificate, _ extensions: [CertificateExtension], depth: Int,
                                      isRoot: Bool) throws(Violation) {
        let at = "certificate \(depth) (\(certificate.subject))"
        try RFC5280Profile.checkCertificate(certificate, extensions, depth: depth)
        let key = certificate.publicKeyShape
        switch key.type {
        case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS:
            if key.bits < 2048 || key.bits % 8 != 0 {
                throw Violation("\(at): an RSA key of \(key.bits) bits (at least 2048, a multiple of 8: BR §6.1.5)")
            }
        case EVP_PKEY_EC:
            if !allowedCurves.contains(key.curve ?? "") {
                throw Violation("\(at): an EC key on \(key.curve ?? "an unnamed curve") (P-256, P-384 or P-521: BR §6.1.5)")
            }
        case EVP_PKEY_DSA:
            throw Violation("\(at): a DSA key (BR §6.1.5 allows RSA and ECDSA)")
        default:
            break  // Ed25519 and Ed448 serve private PKIs; OpenSSL's security level judges the rest.
        }
        let aki = extensions.first { $0.nid == NID_authority_key_identifier }
        if let aki {
            var outer = DERReader(aki.value)
            guard let sequence = outer.next(), sequence.tag == DERTag.sequence, let parts = sequence.elements
            else { throw Violation("\(at): a malformed authorityKeyIdentifier") }
            guard let keyID = parts.first(where: { $0.tag == DERTag.context(0, constructed: false) }) else {
                throw Violation("\(at): an authorityKeyIdentifier without keyIdentifier (RFC 5280 §4.2.1.1, BR §7.1.2)")
            }
            if parts.contains(where: { $0.tag != DERTag.context(0, constructed: false) }) {
                throw Violation("\(at): an authorityKeyIdentifier with authorityCertIssuer or serial number (BR §7.1.2)")
            }
            if isRoot, let ski = subjectKeyIdentifier(extensions), Array(keyID.content) != ski {
                throw Violation("\(at): a root whose authorityKeyIdentifier differs from its subjectKeyIdentifier (BR §7.1.2.1.3)")
            }
        } else if !certificate.isSelfIssued {
            throw Violation("\(at): no authorityKeyIdentifier (RFC 5280 §4.2.1.1)")
        }
        if isRoot, extensions.contains(where: { $0.nid == NID_ext_key_usage }) {
            throw Violation("\(at): a root with extendedKeyUsage (BR §7.1.2.1.2)")
        }
    }

    static func subjectKeyIdentifier(_ extensions: [CertificateExtension]) -> [UInt8]? {
        guard let ski = extensions.first(where: { $0.nid == NID_subject_key_identifier }) else { return nil }
        var reader = DERReader(ski.value)
        guard let octets = reader.next(), octets.tag == DERTag.octetString else { return nil }
        return Array(octets.content)
    }

    static func isWellFormedAccess(_ value: [UInt8]) -> Bool {
        var reader = DERReader(value)
        guard let sequence = reader.next(), sequence.tag == DERTag.sequence, reader.isAtEnd else { return false }
        guard let all = sequence.elements, !all.isEmpty else { return false }
        return all.allSatisfy { description in
            var parts = description.children
            guard description.tag == DERTag.sequence, let method = parts.next(), method.tag == DERTag.objectIdentifier,
                  parts.next() != nil else { return false }
            return parts.isAtEnd
        }
    }
}
