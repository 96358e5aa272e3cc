import CLookoutSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Describes an X.509 v3 certificate (RFC 5280) and signs it, either self-signed or by an
/// issuing CA. `CertificateAuthority` uses it for the local CA and its leaves; tests use it
/// to build whole hierarchies (roots, intermediates, expired or mis-named leaves).
///
/// Extensions written:
/// - CA: basicConstraints `critical, CA:TRUE` (§4.2.1.9), keyUsage `critical, keyCertSign,
///   cRLSign` (§4.2.1.3), subjectKeyIdentifier (§4.2.1.2), and authorityKeyIdentifier
///   (§4.2.1.1) when signed by another CA.
/// - Leaf: basicConstraints `critical, CA:FALSE`, keyUsage `critical, digitalSignature`
///   (plus keyEncipherment for RSA keys), extKeyUsage serverAuth (§4.2.1.12) unless turned
///   off, subjectKeyIdentifier, authorityKeyIdentifier when not self-signed.
/// - subjectAltName (§4.2.1.6) with the given DNS names and IP addresses; marked critical
///   when the subject is empty, as §4.2.1.6 requires.
public struct CertificateBuilder: Sendable {
    /// The subject commonName (at most 64 characters, RFC 5280 Appendix A `ub-common-name`).
    public var commonName: String?
    /// The subject organizationName.
    public var organization: String?
    /// Start of validity, Unix seconds.
    public var notBefore: Int64
    /// End of validity, Unix seconds.
    public var notAfter: Int64
    /// The serial number, big-endian unsigned; nil draws 128 random bits (RFC 5280
    /// §4.1.2.2: positive, at most 20 octets).
    public var serialNumber: [UInt8]?
    /// Whether this is a CA certificate.
    public var isCertificateAuthority: Bool
    /// subjectAltName entries.
    public var subjectAlternativeNames: [SubjectAlternativeName]
    /// Whether a leaf gets extKeyUsage serverAuth (ignored for CAs).
    public var serverAuthentication: Bool

    /// A description with no SANs, a random serial and serverAuth for leaves.
    public init(commonName: String?, organization: String? = nil, notBefore: Int64, notAfter: Int64,
                isCertificateAuthority: Bool = false, subjectAlternativeNames: [SubjectAlternativeName] = []) {
        self.commonName = commonName
        self.organization = organization
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.serialNumber = nil
        self.isCertificateAuthority = isCertificateAuthority
        self.subjectAlternativeNames = subjectAlternativeNames
        self.serverAuthentication = true
    }

    /// A certificate for `key`'s public half, signed by `key` itself; issuer = subject.
    public func selfSigned(with key: PrivateKey) throws(CertificateError) -> Certificate {
        try build(subjectKey: key, issuer: nil, issuerKey: key)
    }

    /// A certificate for `subjectKey`'s public half, issued and signed by `issuer` with
    /// `issuerKey`. The issuer should be a CA; this is not checked, so tests can build
    /// deliberately broken chains.
    public func signed(publicKeyOf subjectKey: PrivateKey, issuer: Certificate,
                       issuerKey: PrivateKey) throws(CertificateError) -> Certificate {
        try build(subjectKey: subjectKey, issuer: issuer, issuerKey: issuerKey)
    }

    private func build(subjectKey: PrivateKey, issuer: Certificate?, issuerKey: PrivateKey) throws(CertificateError) -> Certificate {
        OpenSSLErrorQueue.clear()
        guard let x509 = X509_new() else {
            throw CertificateError.openSSL(.generationFailed, "X509_new failed")
        }
        var handedOver = false
        defer { if !handedOver { X509_free(x509) } }

        guard X509_set_version(x509, Int(X509_VERSION_3)) == 1 else {
            throw CertificateError.openSSL(.generationFailed, "X509_set_version failed")
        }
        try setSerial(x509)
        guard ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter)) != nil else {
            throw CertificateError.openSSL(.generationFailed, "cannot set the validity period")
        }
        guard X509_set_pubkey(x509, subjectKey.pkey) == 1 else {
            throw CertificateError.openSSL(.generationFailed, "X509_set_pubkey failed")
        }
        let subject = X509_get_subject_name(x509)
        for (field, value) in [("CN", commonName), ("O", organization)] {
            guard let value else { continue }
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_txt(subject, field, lookout_MBSTRING_UTF8(), bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw CertificateError.openSSL(.generationFailed, "cannot set subject \(field)=\(value)")
            }
        }
        let issuerName = issuer.map { X509_get_subject_name($0.x509) } ?? subject
        guard X509_set_issuer_name(x509, issuerName) == 1 else {
            throw CertificateError.openSSL(.generationFailed, "X509_set_issuer_name failed")
        }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.x509 ?? x509, x509, nil, nil, 0)
        func add(_ nid: Int32, _ value: String) throws(CertificateError) {
            guard let extensionObject = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw CertificateError.openSSL(.generationFailed, "cannot build extension \(String(cString: OBJ_nid2sn(nid))) = \(value)")
            }
            defer { X509_EXTENSION_free(extensionObject) }
            guard X509_add_ext(x509, extensionObject, -1) == 1 else {
                throw CertificateError.openSSL(.generationFailed, "X509_add_ext failed")
            }
        }
        if isCertificateAuthority {
            try add(NID_basic_constraints, "critical,CA:TRUE")
            try add(NID_key_usage, "critical,keyCertSign,cRLSign")
        } else {
            try add(NID_basic_constraints, "critical,CA:FALSE")
            let isRSA = EVP_PKEY_get_id(subjectKey.pkey) == EVP_PKEY_RSA
            try add(NID_key_usage, isRSA ? "critical,digitalSignature,keyEncipherment" : "critical,digitalSignature")
            if serverAuthentication {
                try add(NID_ext_key_usage, "serverAuth")
            }
        }
        try add(NID_subject_key_identifier, "hash")
        if issuer != nil {
            // keyid from the issuer's SKI; issuer name + serial only if it has none.
            try add(NID_authority_key_identifier, "keyid,issuer")
        }
        if !subjectAlternativeNames.isEmpty {
            try addSubjectAlternativeNames(x509, critical: commonName == nil && organization == nil)
        }

        guard X509_sign(x509, issuerKey.pkey, issuerKey.signingDigest) > 0 else {
            throw CertificateError.openSSL(.generationFailed, "X509_sign failed")
        }
        handedOver = true
        return Certificate(taking: x509)
    }

    private func setSerial(_ x509: OpaquePointer) throws(CertificateError) {
        var bytes = serialNumber ?? []
        if bytes.isEmpty {
            bytes = [UInt8](repeating: 0, count: 16)
            repeat {
                guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else {
                    throw CertificateError.openSSL(.generationFailed, "RAND_bytes failed")
                }
            } while bytes.allSatisfy { $0 == 0 }
        }
        guard let bignum = BN_bin2bn(bytes, Int32(bytes.count), nil) else {
            throw CertificateError.openSSL(.generationFailed, "BN_bin2bn failed")
        }
        defer { BN_free(bignum) }
        guard BN_to_ASN1_INTEGER(bignum, X509_get_serialNumber(x509)) != nil else {
            throw CertificateError.openSSL(.generationFailed, "cannot set the serial number")
        }
    }

    private func addSubjectAlternativeNames(_ x509: OpaquePointer, critical: Bool) throws(CertificateError) {
        guard let names = lookout_sk_GENERAL_NAME_new_null() else {
            throw CertificateError.openSSL(.generationFailed, "sk_GENERAL_NAME_new_null failed")
        }
        defer { GENERAL_NAMES_free(names) }  // frees the names pushed below as well
        for entry in subjectAlternativeNames {
            let type: Int32
            let bytes: [UInt8]
            let string: UnsafeMutablePointer<ASN1_STRING>?
            switch entry {
            case .dnsName(let name):
                type = GEN_DNS
                bytes = Array(name.utf8)
                string = ASN1_IA5STRING_new()
            case .ipAddress(let address):
                guard let raw = HostName.ipAddressBytes(address) else {
                    throw CertificateError(.invalidHost, "\"\(address)\" is not an IPv4 or IPv6 address")
                }
                type = GEN_IPADD
                bytes = raw
                string = ASN1_OCTET_STRING_new()
            }
            guard let string, ASN1_STRING_set(string, bytes, Int32(bytes.count)) == 1 else {
                if let string { ASN1_STRING_free(string) }
                throw CertificateError.openSSL(.generationFailed, "cannot encode \(entry)")
            }
            guard let name = GENERAL_NAME_new() else {
                ASN1_STRING_free(string)
                throw CertificateError.openSSL(.generationFailed, "GENERAL_NAME_new failed")
            }
            GENERAL_NAME_set0_value(name, type, UnsafeMutableRawPointer(string))
            guard lookout_sk_GENERAL_NAME_push(names, name) > 0 else {
                GENERAL_NAME_free(name)
                throw CertificateError.openSSL(.generationFailed, "sk_GENERAL_NAME_push failed")
            }
        }
        guard X509_add1_ext_i2d(x509, NID_subject_alt_name, UnsafeMutableRawPointer(names), critical ? 1 : 0, UInt(X509V3_ADD_DEFAULT)) == 1 else {
            throw CertificateError.openSSL(.generationFailed, "cannot add subjectAltName")
        }
    }
}
