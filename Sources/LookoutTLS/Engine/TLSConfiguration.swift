/// The settings a `TLSEngine` is built from.
///
/// Clients do not let OpenSSL judge the server's certificate (`SSL_VERIFY_NONE`): the
/// presented chain is available as `TLSConnection.peerCertificateChain` after the handshake
/// and is meant for `ServerTrustManager`, which decides per host with pins and rules.
public struct TLSConfiguration: Sendable {
    /// Which side of the handshake the engine plays.
    public enum Role: Sendable, Hashable {
        /// Originates TLS (upstream connections).
        case client
        /// Terminates TLS (intercepted client connections).
        case server
    }

    /// Which side of the handshake the engine plays.
    public var role: Role
    /// The lowest version accepted (default TLS 1.2).
    public var minimumVersion: TLSProtocolVersion
    /// The highest version offered; nil for the highest OpenSSL supports (TLS 1.3).
    public var maximumVersion: TLSProtocolVersion?
    /// ALPN protocol names (RFC 7301) in preference order, e.g. ["h2", "http/1.1"]; empty
    /// for no ALPN. A server picks by its own preference among the client's offers and
    /// refuses a client whose offers do not overlap with a no_application_protocol alert.
    public var applicationProtocols: [String]
    /// Client only: how many hosts' sessions to keep for resumption (default 256; 0 disables
    /// resumption). One session per host, the most recent; TLS 1.3 tickets may be reused by
    /// parallel connections to the same host.
    public var sessionCacheCapacity: Int
    /// Server only: the certificate to present.
    public var certificateSource: TLSServerCertificateSource?
    /// Server only: ask clients for a certificate issued under one of these; one that presents
    /// a certificate they do not verify fails the handshake, one that presents none goes on.
    public var clientCertificateAuthorities: [Certificate] = []

    /// A configuration with every field given.
    public init(role: Role, minimumVersion: TLSProtocolVersion = .tls12, maximumVersion: TLSProtocolVersion? = nil,
                applicationProtocols: [String] = [], sessionCacheCapacity: Int = 256,
                certificateSource: TLSServerCertificateSource? = nil) {
        self.role = role
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
        self.applicationProtocols = applicationProtocols
        self.sessionCacheCapacity = sessionCacheCapacity
        self.certificateSource = certificateSource
    }

    /// A client configuration; sessions of up to `sessionCacheCapacity` hosts are kept for
    /// resumption.
    public static func client(minimumVersion: TLSProtocolVersion = .tls12, maximumVersion: TLSProtocolVersion? = nil,
                              applicationProtocols: [String] = [], sessionCacheCapacity: Int = 256) -> TLSConfiguration {
        TLSConfiguration(role: .client, minimumVersion: minimumVersion, maximumVersion: maximumVersion,
                         applicationProtocols: applicationProtocols, sessionCacheCapacity: sessionCacheCapacity)
    }

    /// A server configuration presenting `chain` (leaf first) with the leaf's `key`.
    public static func server(chain: [Certificate], key: PrivateKey, minimumVersion: TLSProtocolVersion = .tls12,
                              maximumVersion: TLSProtocolVersion? = nil, applicationProtocols: [String] = []) -> TLSConfiguration {
        TLSConfiguration(role: .server, minimumVersion: minimumVersion, maximumVersion: maximumVersion,
                         applicationProtocols: applicationProtocols, certificateSource: .fixed(chain: chain, key: key))
    }

    /// A server presenting `identity` (a certificate file and its key), asking clients for a
    /// certificate under `clientAuthorities` when there are any.
    public static func server(identity: ClientIdentity, clientAuthorities: [Certificate],
                              minimumVersion: TLSProtocolVersion = .tls12) -> TLSConfiguration {
        var configuration = server(chain: identity.chain, key: identity.key, minimumVersion: minimumVersion,
                                   applicationProtocols: ["http/1.1"])
        configuration.clientCertificateAuthorities = clientAuthorities
        return configuration
    }

    /// A server configuration choosing the certificate per SNI name, e.g. with
    /// `CertificateAuthority.issueLeaf(for:)`.
    public static func server(minimumVersion: TLSProtocolVersion = .tls12, maximumVersion: TLSProtocolVersion? = nil,
                              applicationProtocols: [String] = [],
                              certificateSelector: @escaping @Sendable (String?) throws -> (chain: [Certificate], key: PrivateKey)) -> TLSConfiguration {
        TLSConfiguration(role: .server, minimumVersion: minimumVersion, maximumVersion: maximumVersion,
                         applicationProtocols: applicationProtocols, certificateSource: .perServerName(certificateSelector))
    }
}
