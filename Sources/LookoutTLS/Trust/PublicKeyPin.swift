/// A public-key pin: the SHA-256 digest of a DER-encoded SubjectPublicKeyInfo
/// (RFC 5280 §4.1.2.7), as HPKP (RFC 7469 §2.4) and OkHttp's CertificatePinner define it.
///
/// Written `sha256/BASE64` (OkHttp); curl's `--pinnedpubkey` spelling `sha256//BASE64` is
/// accepted as well. Two pins are equal when their digests are.
public struct PublicKeyPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32-byte SHA-256 digest.
    public let digest: [UInt8]

    /// Parses `sha256/BASE64` or `sha256//BASE64`; surrounding whitespace is ignored, the
    /// algorithm name is case-insensitive, and the base64 must decode to exactly 32 bytes.
    public init(_ text: String) throws(CertificateError) {
        let trimmed = text.trimmingASCIIWhitespace()
        guard let slash = trimmed.firstIndex(of: "/") else {
            throw CertificateError(.invalidPin, "pin \"\(text)\" is not of the form sha256/BASE64")
        }
        let algorithm = trimmed[..<slash].lowercased()
        guard algorithm == "sha256" else {
            throw CertificateError(.invalidPin, "pin \"\(text)\" uses \"\(algorithm)\"; only sha256 pins are supported")
        }
        // OkHttp writes sha256/ + base64, curl sha256// + base64, and base64 itself may begin
        // with "/". A 32-byte digest is 43 or 44 base64 characters, so at most one reading
        // yields 32 bytes: try OkHttp's first, then curl's.
        let encoded = String(trimmed[trimmed.index(after: slash)...])
        var candidates = [encoded]
        if encoded.hasPrefix("/") { candidates.append(String(encoded.dropFirst())) }
        guard let bytes = candidates.lazy.compactMap(Base64.decode).first(where: { $0.count == 32 })
                ?? candidates.lazy.compactMap(Base64.decode).first else {
            throw CertificateError(.invalidPin, "pin \"\(text)\" is not valid base64")
        }
        try self.init(sha256Digest: bytes)
    }

    /// A pin from a raw digest, which must be 32 bytes.
    public init(sha256Digest: [UInt8]) throws(CertificateError) {
        guard sha256Digest.count == 32 else {
            throw CertificateError(.invalidPin, "a SHA-256 pin is 32 bytes, not \(sha256Digest.count)")
        }
        self.digest = sha256Digest
    }

    /// A pin for the given DER-encoded SubjectPublicKeyInfo.
    public init(subjectPublicKeyInfoDER: [UInt8]) {
        self.digest = SHA256.digest(subjectPublicKeyInfoDER)
    }

    /// "sha256/BASE64", OkHttp's form.
    public var description: String { "sha256/" + Base64.encode(digest) }
}
