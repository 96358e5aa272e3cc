/// A failure to parse, create, load or store certificates, keys, pins or trust stores.
public struct CertificateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of operation failed.
    public enum Kind: String, Sendable, Equatable {
        /// PEM text held no certificate or key, or it did not decode.
        case invalidPEM = "invalid_pem"
        /// DER bytes did not decode.
        case invalidDER = "invalid_der"
        /// A `sha256/…` pin was malformed.
        case invalidPin = "invalid_pin"
        /// A host name, IP literal or host pattern is malformed, or cannot be put in a certificate.
        case invalidHost = "invalid_host"
        /// A file or directory could not be read, written or created.
        case fileSystem = "file_system"
        /// OpenSSL failed while generating a key or building or signing a certificate.
        case generationFailed = "generation_failed"
        /// A private key does not belong to the certificate it was paired with.
        case keyMismatch = "key_mismatch"
        /// A certificate meant to act as a CA is not one.
        case notACertificateAuthority = "not_a_certificate_authority"
    }

    /// What kind of operation failed.
    public let kind: Kind
    /// Human-readable detail, including OpenSSL's error strings when OpenSSL reported any.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// "invalid_pem: PEM_read_bio_X509 failed: error:…".
    public var description: String { "\(kind.rawValue): \(message)" }

    /// An error whose message ends with whatever OpenSSL queued on this thread.
    static func openSSL(_ kind: Kind, _ context: String) -> CertificateError {
        CertificateError(kind, OpenSSLErrorQueue.message(context))
    }
}
