/// Lookout's local certificate authority for TLS interception: a self-signed EC P-256 CA
/// that mints short-lived leaf certificates for the hosts clients connect to.
///
/// The CA is created on first use in a state directory and reloaded afterwards. Leaves are
/// cached in a bounded LRU (`LeafCertificateCache`). Thread-safe: `issueLeaf` may be called
/// from any thread.
public final class CertificateAuthority: Sendable {
    /// File name of the CA certificate inside the state directory.
    public static let certificateFileName = "ca.pem"
    /// File name of the CA private key inside the state directory (mode 0600).
    public static let privateKeyFileName = "ca-key.pem"
    /// Lifetime of a new CA: ten years (3650 days).
    public static let authorityLifetime: Int64 = 3650 * 86_400
    /// Lifetime of a leaf: 30 days after issuance.
    public static let leafLifetime: Int64 = 30 * 86_400
    /// Leaves and new CAs start this long before issuance (one hour), tolerating clients
    /// whose clocks run a little behind.
    public static let backdating: Int64 = 3_600

    /// The CA certificate; what users install as a trust anchor.
    public let certificate: Certificate
    /// The CA private key.
    public let privateKey: PrivateKey
    /// Whether `loadOrCreate` created the CA in this call (false when it was loaded, and for
    /// CAs built with `init(certificate:privateKey:)`).
    public let wasCreated: Bool
    /// Minted leaves, keyed by normalised host.
    public let leafCache: LeafCertificateCache

    /// A CA from an existing certificate and its key. The certificate must be a CA
    /// (basicConstraints CA:TRUE) and the key must match it.
    public convenience init(certificate: Certificate, privateKey: PrivateKey,
                            leafCacheCapacity: Int = 1024) throws(CertificateError) {
        try self.init(certificate: certificate, privateKey: privateKey, leafCacheCapacity: leafCacheCapacity, wasCreated: false)
    }

    private init(certificate: Certificate, privateKey: PrivateKey, leafCacheCapacity: Int, wasCreated: Bool) throws(CertificateError) {
        guard certificate.matches(privateKey: privateKey) else {
            throw CertificateError(.keyMismatch, "the private key does not belong to CA certificate \(certificate.subject)")
        }
        guard certificate.isCertificateAuthority else {
            throw CertificateError(.notACertificateAuthority, "\(certificate.subject) is not a CA certificate (basicConstraints CA:TRUE missing)")
        }
        self.certificate = certificate
        self.privateKey = privateKey
        self.wasCreated = wasCreated
        self.leafCache = LeafCertificateCache(capacity: leafCacheCapacity)
    }

    /// A new CA held only in memory: subject "CN=Lookout Local CA <8 hex digits>, O=Lookout",
    /// valid from one hour before `now` (Unix seconds; nil = the current time) for ten years.
    public static func create(now: Int64? = nil, leafCacheCapacity: Int = 1024) throws(CertificateError) -> CertificateAuthority {
        let now = now ?? UnixTime.now()
        let key = try PrivateKey.generateP256()
        var suffix = [UInt8](repeating: 0, count: 4)
        for index in suffix.indices { suffix[index] = UInt8.random(in: 0...255) }
        let hex = suffix.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
        let builder = CertificateBuilder(commonName: "Lookout Local CA \(hex)", organization: "Lookout",
                                         notBefore: now - backdating, notAfter: now + authorityLifetime,
                                         isCertificateAuthority: true)
        let certificate = try builder.selfSigned(with: key)
        return try CertificateAuthority(certificate: certificate, privateKey: key,
                                        leafCacheCapacity: leafCacheCapacity, wasCreated: true)
    }

    /// Loads the CA from `directory` (`ca.pem`, `ca-key.pem`), or creates it there when
    /// neither file exists. A missing directory is created with mode 0700 (parents too); the
    /// key file is written with mode 0600 and the certificate with 0644. Exactly one of the
    /// two files existing is an error rather than a reason to overwrite anything.
    public static func loadOrCreate(directory: String, leafCacheCapacity: Int = 1024) throws(CertificateError) -> CertificateAuthority {
        try FileIO.makeDirectory(directory, mode: 0o700)
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        let certificatePath = base + certificateFileName
        let keyPath = base + privateKeyFileName
        let haveCertificate = FileIO.exists(certificatePath)
        let haveKey = FileIO.exists(keyPath)

        switch (haveCertificate, haveKey) {
        case (true, true):
            let certificate = try Certificate.loadAll(pemFile: certificatePath)[0]
            let key = try PrivateKey(pem: String(decoding: try FileIO.read(keyPath), as: UTF8.self))
            return try CertificateAuthority(certificate: certificate, privateKey: key,
                                            leafCacheCapacity: leafCacheCapacity, wasCreated: false)
        case (false, false):
            let authority = try create(leafCacheCapacity: leafCacheCapacity)
            // Key first: a certificate without its key would be unusable.
            try FileIO.writeAtomically(Array(authority.privateKey.pemString.utf8), to: keyPath, mode: 0o600, exclusive: true)
            try FileIO.writeAtomically(Array(authority.certificate.pemString.utf8), to: certificatePath, mode: 0o644, exclusive: true)
            return authority
        case (true, false):
            throw CertificateError(.fileSystem, "\(certificatePath) exists but \(keyPath) does not; restore the key or remove the certificate to create a new CA")
        case (false, true):
            throw CertificateError(.fileSystem, "\(keyPath) exists but \(certificatePath) does not; restore the certificate or remove the key to create a new CA")
        }
    }

    /// A leaf certificate for `host` signed by this CA, with its new EC P-256 key; served
    /// from the cache when a leaf for the host is still valid for at least a day.
    ///
    /// The leaf has subjectAltName `IP:` for IPv4/IPv6 literals (brackets allowed) and
    /// `DNS:` otherwise, CN = host when it fits in 64 characters, O = Lookout, extKeyUsage
    /// serverAuth, authorityKeyIdentifier, a random 128-bit serial, and is valid from one
    /// hour ago for 30 days (never past the CA's own expiry). `chain` is the leaf followed
    /// by the CA certificate.
    public func issueLeaf(for host: String) throws(CertificateError) -> (chain: [Certificate], key: PrivateKey) {
        try issueLeaf(for: host, now: UnixTime.now())
    }

    /// `issueLeaf(for:)` at an explicit time (Unix seconds), for tests.
    public func issueLeaf(for host: String, now: Int64) throws(CertificateError) -> (chain: [Certificate], key: PrivateKey) {
        let normalized = HostName.normalize(host)
        let alternativeName: SubjectAlternativeName
        if HostName.isIPAddress(normalized) {
            alternativeName = SubjectAlternativeName(host: normalized)
        } else {
            guard HostName.isValidDNSName(normalized) else {
                throw CertificateError(.invalidHost, "cannot issue a certificate for \"\(host)\": not a DNS name or IP address")
            }
            alternativeName = .dnsName(normalized)
        }
        if let cached = leafCache.entry(for: normalized, now: now) {
            return (cached.chain, cached.key)
        }
        let key = try PrivateKey.generateP256()
        let commonName = normalized.utf8.count <= 64 ? normalized : nil
        let builder = CertificateBuilder(commonName: commonName, organization: "Lookout",
                                         notBefore: now - Self.backdating,
                                         notAfter: min(now + Self.leafLifetime, certificate.notAfter),
                                         subjectAlternativeNames: [alternativeName])
        let leaf = try builder.signed(publicKeyOf: key, issuer: certificate, issuerKey: privateKey)
        let entry = leafCache.insert(LeafCertificateCache.Entry(chain: [leaf, certificate], key: key), for: normalized, now: now)
        return (entry.chain, entry.key)
    }

    /// The CA certificate as PEM, for `lookout ca export` and for clients' trust stores.
    public func exportPEM() -> String {
        certificate.pemString
    }

    /// The CA certificate as DER (`lookout ca export --der`).
    public func exportDER() -> [UInt8] {
        certificate.derBytes
    }
}
