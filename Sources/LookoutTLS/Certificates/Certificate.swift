import CLookoutSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An X.509 certificate (RFC 5280), wrapping an OpenSSL `X509` that it owns and frees.
///
/// Immutable after creation and safe to share between threads. Two certificates are equal
/// when their DER encodings are.
public final class Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The wrapped `X509*`; owned (one reference) by this object.
    let x509: OpaquePointer

    /// The certificate's DER encoding.
    public let derBytes: [UInt8]

    /// Takes ownership of one reference to `x509`.
    init(taking x509: OpaquePointer) {
        self.x509 = x509
        let length = i2d_X509(x509, nil)
        precondition(length > 0, "i2d_X509 failed on a parsed certificate")
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509(x509, &cursor)
        }
        self.derBytes = bytes
    }

    /// Adds a reference to a borrowed `x509` (e.g. one inside an `SSL` peer chain).
    convenience init(retaining x509: OpaquePointer) {
        X509_up_ref(x509)
        self.init(taking: x509)
    }

    deinit {
        X509_free(x509)
    }

    /// Parses the first certificate in PEM text ("-----BEGIN CERTIFICATE-----", RFC 7468 §5).
    public convenience init(pem: String) throws(CertificateError) {
        let x509 = try MemoryBIO.withReadable(Array(pem.utf8)) { bio throws(CertificateError) -> OpaquePointer in
            OpenSSLErrorQueue.clear()
            guard let x509 = PEM_read_bio_X509(bio, nil, nil, nil) else {
                throw CertificateError.openSSL(.invalidPEM, "no certificate in PEM text")
            }
            return x509
        }
        self.init(taking: x509)
    }

    /// Parses one DER-encoded certificate; trailing bytes are an error.
    public convenience init(der: [UInt8]) throws(CertificateError) {
        OpenSSLErrorQueue.clear()
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let x509 = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            if cursor != buffer.baseAddress.map({ $0 + buffer.count }) {
                X509_free(x509)
                return nil
            }
            return x509
        }
        guard let parsed else {
            throw CertificateError.openSSL(.invalidDER, "bytes are not one DER certificate")
        }
        self.init(taking: parsed)
    }

    /// Every certificate in PEM text, in order. Non-certificate blocks are skipped; text
    /// with no certificate at all is an error.
    public static func loadAll(pem: String) throws(CertificateError) -> [Certificate] {
        try MemoryBIO.withReadable(Array(pem.utf8)) { bio throws(CertificateError) -> [Certificate] in
            try readAll(from: bio, source: "PEM text")
        }
    }

    /// Every certificate in a file. The file is read as PEM (any number of certificates,
    /// as in a CA bundle); a file with no PEM marker is read as one DER certificate.
    public static func loadAll(pemFile path: String) throws(CertificateError) -> [Certificate] {
        let bytes = try FileIO.read(path)
        if !PEMReading.looksLikePEM(bytes) {
            do {
                return [try Certificate(der: bytes)]
            } catch {
                throw CertificateError(.invalidDER, "\(path): neither PEM nor a DER certificate (\(error.message))")
            }
        }
        return try MemoryBIO.withReadable(bytes) { bio throws(CertificateError) -> [Certificate] in
            try readAll(from: bio, source: path)
        }
    }

    private static func readAll(from bio: OpaquePointer, source: String) throws(CertificateError) -> [Certificate] {
        var certificates: [Certificate] = []
        OpenSSLErrorQueue.clear()
        while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
            certificates.append(Certificate(taking: x509))
        }
        try PEMReading.finishReading(source, what: "certificate")
        guard !certificates.isEmpty else {
            throw CertificateError(.invalidPEM, "\(source): no certificate found")
        }
        return certificates
    }

    /// The certificate as PEM text, ending with a newline.
    public var pemString: String {
        MemoryBIO.collectString { PEM_write_bio_X509($0, x509) == 1 } ?? ""
    }

    /// The subject as one line in certificate order, e.g. "CN=Lookout Local CA 1a2b3c4d, O=Lookout".
    public var subject: String {
        Certificate.oneLine(X509_get_subject_name(x509))
    }

    /// The subject in RFC 2253 form, most specific first: "CN=billing,O=corp".
    public var subjectRFC2253: String {
        guard let name = X509_get_subject_name(x509) else { return "" }
        return MemoryBIO.collectString { lookout_X509_NAME_print_rfc2253($0, name) >= 0 } ?? ""
    }

    /// The issuer, in the same form as `subject`.
    public var issuer: String {
        Certificate.oneLine(X509_get_issuer_name(x509))
    }

    /// The serial number as upper-case hex, e.g. "0A1B…".
    public var serialNumberHex: String {
        guard let serial = X509_get0_serialNumber(x509),
              let bignum = ASN1_INTEGER_to_BN(serial, nil) else { return "" }
        defer { BN_free(bignum) }
        guard let hex = BN_bn2hex(bignum) else { return "" }
        defer { lookout_OPENSSL_free(hex) }
        return String(cString: hex)
    }

    /// Start of the validity period, in seconds since the Unix epoch (RFC 5280 §4.1.2.5).
    public var notBefore: Int64 {
        Certificate.unixTime(X509_get0_notBefore(x509))
    }

    /// End of the validity period, in seconds since the Unix epoch.
    public var notAfter: Int64 {
        Certificate.unixTime(X509_get0_notAfter(x509))
    }

    /// Whether `time` (Unix seconds) lies within the validity period.
    public func isValid(at time: Int64) -> Bool {
        time >= notBefore && time <= notAfter
    }

    /// The DNS-name and IP-address entries of the subjectAltName extension
    /// (RFC 5280 §4.2.1.6), in certificate order. Other kinds of name are left out.
    public var subjectAlternativeNames: [SubjectAlternativeName] {
        guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) else { return [] }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        var result: [SubjectAlternativeName] = []
        for index in 0..<lookout_sk_GENERAL_NAME_num(names) {
            guard let name = lookout_sk_GENERAL_NAME_value(names, index),
                  let string = lookout_GENERAL_NAME_string(name) else { continue }
            let length = Int(ASN1_STRING_length(string))
            let bytes = length > 0 ? Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(string), count: length)) : []
            switch lookout_GENERAL_NAME_type(name) {
            case GEN_DNS:
                result.append(.dnsName(String(decoding: bytes, as: UTF8.self)))
            case GEN_IPADD:
                if let text = HostName.formatIPAddress(bytes) { result.append(.ipAddress(text)) }
            default:
                break
            }
        }
        return result
    }

    /// The SHA-256 pin of the certificate's SubjectPublicKeyInfo.
    /// Read from the certificate's own SubjectPublicKeyInfo, so a key OpenSSL cannot load (an
    /// unknown algorithm, a malformed point) still has its pin instead of stopping the process.
    public var publicKeyPin: PublicKeyPin {
        PublicKeyPin(subjectPublicKeyInfoDER: SubjectPublicKeyInfo.der(of: self))
    }

    /// The pin as text: "sha256/BASE64" of SHA-256 over the DER SubjectPublicKeyInfo, equal
    /// to `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der |
    /// openssl dgst -sha256 -binary | base64`.
    public var spkiSHA256Pin: String {
        publicKeyPin.description
    }

    /// The SHA-256 fingerprint of the DER certificate as colon-separated upper-case hex, as
    /// `openssl x509 -fingerprint -sha256` prints it.
    public var sha256Fingerprint: String {
        SHA256.digest(derBytes).map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    /// Whether the certificate is self-issued and its signature verifies with its own key.
    public var isSelfSigned: Bool {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        return X509_self_signed(x509, 1) == 1
    }

    /// Whether basicConstraints marks the certificate as a CA (RFC 5280 §4.2.1.9).
    public var isCertificateAuthority: Bool {
        X509_check_ca(x509) != 0
    }

    /// Whether `key` is the private half of this certificate's public key.
    public func matches(privateKey key: PrivateKey) -> Bool {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        return X509_check_private_key(x509, key.pkey) == 1
    }

    /// "subject (issuer: …, pin: sha256/…)".
    public var description: String {
        "\(subject) (issuer: \(issuer), \(spkiSHA256Pin))"
    }

    /// DER equality.
    public static func == (lhs: Certificate, rhs: Certificate) -> Bool {
        lhs.derBytes == rhs.derBytes
    }

    /// Hashes the DER encoding.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(derBytes)
    }

    static func oneLine(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        return MemoryBIO.collectString { lookout_X509_NAME_print_oneline($0, name) >= 0 } ?? ""
    }

    static func unixTime(_ asn1Time: UnsafePointer<ASN1_TIME>?) -> Int64 {
        guard let asn1Time else { return 0 }
        var parts = tm()
        guard ASN1_TIME_to_tm(asn1Time, &parts) == 1 else { return 0 }
        return Int64(timegm(&parts))
    }
}
