import CLookoutSSL

/// An X.509 certificate revocation list (RFC 5280 §5), wrapping an OpenSSL `X509_CRL` that it
/// owns. Immutable after creation and safe to share between threads.
public final class CertificateRevocationList: @unchecked Sendable {
    /// The wrapped `X509_CRL*`; owned (one reference) by this object.
    let crl: OpaquePointer

    init(taking crl: OpaquePointer) {
        self.crl = crl
    }

    deinit {
        X509_CRL_free(crl)
    }

    /// The issuer's name, "CN=…, O=…".
    public var issuer: String {
        guard let name = X509_CRL_get_issuer(crl) else { return "" }
        return MemoryBIO.collectString { bio in lookout_X509_NAME_print_oneline(bio, name) >= 0 } ?? ""
    }

    /// Every CRL in a file: PEM (any number of "X509 CRL" blocks) or one DER CRL.
    public static func loadAll(file path: String) throws(CertificateError) -> [CertificateRevocationList] {
        let bytes = try FileIO.read(path)
        OpenSSLErrorQueue.clear()
        if !PEMReading.looksLikePEM(bytes) {
            let parsed: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_X509_CRL(nil, &cursor, buffer.count)
            }
            guard let parsed else {
                throw CertificateError.openSSL(.invalidDER, "\(path): neither PEM nor a DER certificate revocation list")
            }
            return [CertificateRevocationList(taking: parsed)]
        }
        return try MemoryBIO.withReadable(bytes) { bio throws(CertificateError) -> [CertificateRevocationList] in
            var lists: [CertificateRevocationList] = []
            while let crl = PEM_read_bio_X509_CRL(bio, nil, nil, nil) {
                lists.append(CertificateRevocationList(taking: crl))
            }
            try PEMReading.finishReading(path, what: "CRL")
            guard !lists.isEmpty else {
                throw CertificateError(.invalidPEM, "\(path): no certificate revocation list (\"-----BEGIN X509 CRL-----\") found")
            }
            return lists
        }
    }
}
