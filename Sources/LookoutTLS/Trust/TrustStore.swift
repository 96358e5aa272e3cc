import CLookoutSSL

/// A set of trust anchors as an OpenSSL `X509_STORE`: the system CA bundle plus any extra
/// CA files or certificates.
///
/// Immutable after creation and safe to share: OpenSSL locks the store internally while
/// `X509_verify_cert` looks issuers up, so one store serves concurrent evaluations.
public final class TrustStore: @unchecked Sendable {
    /// Debian's system CA bundle, maintained by `update-ca-certificates`.
    public static let systemBundlePath = "/etc/ssl/certs/ca-certificates.crt"

    /// The wrapped `X509_STORE*`; owned by this object.
    let store: OpaquePointer
    /// Every trust anchor in the store, in load order.
    public let anchors: [Certificate]
    /// The DER of the anchors that came from the system bundle, which the Web PKI profile
    /// leaves as their root program published them (`WebPKIProfile`).
    let systemAnchors: Set<[UInt8]>
    /// Whether any anchor came from `ca_files` or was given directly (not the system bundle):
    /// chains ending at those are judged under `TrustProfile.rfc5280` by default.
    public let hasUserAnchors: Bool

    /// Whether certificates that are not self-signed roots (an intermediate, a pinned leaf)
    /// count as trust anchors (`X509_V_FLAG_PARTIAL_CHAIN`).
    public let allowsPartialChains: Bool

    /// A store with the certificates of `systemBundle` (nil for none), of each file in
    /// `additionalCAFiles` (PEM bundles or single DER certificates), and `additionalCertificates`.
    /// With `allowsPartialChains`, a path may end at any anchor, not only at a self-signed root.
    public init(systemBundle: String? = TrustStore.systemBundlePath, additionalCAFiles: [String] = [],
                additionalCertificates: [Certificate] = [], allowsPartialChains: Bool = false) throws(CertificateError) {
        var anchors: [Certificate] = []
        if let systemBundle {
            anchors += try Certificate.loadAll(pemFile: systemBundle)
        }
        systemAnchors = Set(anchors.map(\.derBytes))
        for file in additionalCAFiles {
            anchors += try Certificate.loadAll(pemFile: file)
        }
        anchors += additionalCertificates
        let systemAnchors = self.systemAnchors
        hasUserAnchors = anchors.contains { !systemAnchors.contains($0.derBytes) }
        OpenSSLErrorQueue.clear()
        guard let store = X509_STORE_new() else {
            throw CertificateError.openSSL(.generationFailed, "X509_STORE_new failed")
        }
        for anchor in anchors {
            // X509_STORE_add_cert takes its own reference; duplicates are accepted.
            guard X509_STORE_add_cert(store, anchor.x509) == 1 else {
                X509_STORE_free(store)
                throw CertificateError.openSSL(.generationFailed, "X509_STORE_add_cert failed for \(anchor.subject)")
            }
        }
        if allowsPartialChains {
            _ = X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        }
        self.store = store
        self.anchors = anchors
        self.allowsPartialChains = allowsPartialChains
    }

    /// A store with only the given anchors (no system bundle); convenient for tests and
    /// private PKIs.
    public convenience init(anchors: [Certificate], allowsPartialChains: Bool = false) throws(CertificateError) {
        try self.init(systemBundle: nil, additionalCertificates: anchors, allowsPartialChains: allowsPartialChains)
    }

    /// Whether `certificate` came from the system bundle.
    public func isSystemAnchor(_ certificate: Certificate) -> Bool {
        systemAnchors.contains(certificate.derBytes)
    }

    deinit {
        X509_STORE_free(store)
    }
}
