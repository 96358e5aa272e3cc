/// A client certificate, its chain and its private key, offered to origins that ask for one
/// (a TLS CertificateRequest, RFC 8446 §4.3.2 / RFC 5246 §7.4.4) — `trust.rules[i].client_certificate`.
public final class ClientIdentity: Sendable {
    /// The leaf first, then the chain as the file lists it.
    public let chain: [Certificate]
    let key: PrivateKey

    /// Loads a PEM file holding the certificate then its chain, and a PEM file holding its
    /// unencrypted private key; fails unless the key belongs to the certificate.
    public init(certificateFile: String, keyFile: String) throws(CertificateError) {
        let chain = try Certificate.loadAll(pemFile: certificateFile)
        guard let leaf = chain.first else {
            throw CertificateError(.invalidPEM, "\(certificateFile) holds no certificate")
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pem: String(decoding: try FileIO.read(keyFile), as: UTF8.self))
        } catch {
            throw CertificateError(error.kind, "\(keyFile): \(error.message)")
        }
        guard leaf.matches(privateKey: key) else {
            throw CertificateError(.keyMismatch, "the key in \(keyFile) does not belong to the certificate in \(certificateFile)")
        }
        self.chain = chain
        self.key = key
    }

    /// The leaf's subject, one line.
    public var subject: String { chain[0].subject }
    /// The leaf's SHA-256 fingerprint.
    public var sha256Fingerprint: String { chain[0].sha256Fingerprint }
}
