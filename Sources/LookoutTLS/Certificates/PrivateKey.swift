import CLookoutSSL

/// A private key, wrapping an OpenSSL `EVP_PKEY` that it owns and frees.
///
/// Keys this library generates are ECDSA P-256 (secp256r1, RFC 5480 §2.1.1.1); keys read
/// from PEM may be of any type OpenSSL supports. Immutable and safe to share between threads.
public final class PrivateKey: @unchecked Sendable {
    /// The wrapped `EVP_PKEY*`; owned (one reference) by this object.
    let pkey: OpaquePointer

    /// Takes ownership of one reference to `pkey`.
    init(taking pkey: OpaquePointer) {
        self.pkey = pkey
    }

    deinit {
        EVP_PKEY_free(pkey)
    }

    /// Generates a new EC P-256 key through `EVP_PKEY_CTX` (`EVP_PKEY_keygen_init`,
    /// group "P-256", `EVP_PKEY_generate`).
    public static func generateP256() throws(CertificateError) -> PrivateKey {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CertificateError.openSSL(.generationFailed, "EVP_PKEY_CTX_new_from_name(EC) failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else {
            throw CertificateError.openSSL(.generationFailed, "EVP_PKEY_keygen_init failed")
        }
        guard EVP_PKEY_CTX_set_group_name(context, "P-256") == 1 else {
            throw CertificateError.openSSL(.generationFailed, "EVP_PKEY_CTX_set_group_name(P-256) failed")
        }
        var generated: OpaquePointer? = nil
        guard EVP_PKEY_generate(context, &generated) == 1, let generated else {
            throw CertificateError.openSSL(.generationFailed, "EVP_PKEY_generate failed")
        }
        return PrivateKey(taking: generated)
    }

    /// Parses an unencrypted private key in PEM: PKCS#8 ("PRIVATE KEY", RFC 5208 / RFC 7468
    /// §10), or the traditional "EC PRIVATE KEY" / "RSA PRIVATE KEY" forms.
    public convenience init(pem: String) throws(CertificateError) {
        let parsed = try MemoryBIO.withReadable(Array(pem.utf8)) { bio throws(CertificateError) -> OpaquePointer in
            OpenSSLErrorQueue.clear()
            guard let pkey = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw CertificateError.openSSL(.invalidPEM, "no unencrypted private key in PEM text")
            }
            return pkey
        }
        self.init(taking: parsed)
    }

    /// The key as unencrypted PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"). Store it with
    /// file mode 0600.
    public var pemString: String {
        MemoryBIO.collectString { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) == 1 } ?? ""
    }

    /// The pin of the public half, as `Certificate.publicKeyPin` computes it.
    public var publicKeyPin: PublicKeyPin {
        SubjectPublicKeyInfo.pin(of: pkey)
    }

    /// "sha256/BASE64" of the DER SubjectPublicKeyInfo of the public half.
    public var spkiSHA256Pin: String {
        publicKeyPin.description
    }

    /// OpenSSL's name for the key type, e.g. "EC", "RSA", "ED25519".
    public var algorithmName: String {
        EVP_PKEY_get0_type_name(pkey).map { String(cString: $0) } ?? "unknown"
    }

    /// The digest to sign certificates with: SHA-256, or none for Ed25519/Ed448 which hash
    /// internally (RFC 8410 §6).
    var signingDigest: OpaquePointer? {
        let id = EVP_PKEY_get_id(pkey)
        return (id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) ? nil : EVP_sha256()
    }
}
