import CLookoutSSL

/// The DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) of an `EVP_PKEY`, which is what
/// `i2d_PUBKEY` writes and what `openssl pkey -pubin -outform der` prints.
enum SubjectPublicKeyInfo {
    /// The DER encoding of the public half of `pkey`.
    static func der(of pkey: OpaquePointer) -> [UInt8] {
        let length = i2d_PUBKEY(pkey, nil)
        precondition(length > 0, "i2d_PUBKEY failed")
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_PUBKEY(pkey, &cursor)
        }
        return bytes
    }

    /// The DER SubjectPublicKeyInfo exactly as `certificate` carries it (`i2d_X509_PUBKEY`).
    static func der(of certificate: Certificate) -> [UInt8] {
        guard let key = X509_get_X509_PUBKEY(certificate.x509) else { return [] }
        let length = i2d_X509_PUBKEY(key, nil)
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509_PUBKEY(key, &cursor)
        }
        return bytes
    }

    /// The pin of `pkey`'s public key.
    static func pin(of pkey: OpaquePointer) -> PublicKeyPin {
        PublicKeyPin(subjectPublicKeyInfoDER: der(of: pkey))
    }
}
