import CLookoutSSL
import LookoutSync

/// A configured OpenSSL `SSL_CTX` that makes memory-BIO `TLSConnection`s.
///
/// Create one engine per configuration and share it: making connections is thread-safe,
/// and a client engine's session cache (one resumable session per host) is behind a mutex.
/// Connections keep their engine alive.
public final class TLSEngine: @unchecked Sendable {
    /// The configuration the engine was built from.
    public let configuration: TLSConfiguration
    /// The `SSL_CTX*`; owned by this object.
    let context: OpaquePointer
    /// Client only: the last resumable session per host.
    private let sessions: Guarded<LRUDictionary<String, SSLSession>>?

    /// Builds the `SSL_CTX`: protocol version bounds, ALPN, compression and renegotiation
    /// off, `SSL_MODE_RELEASE_BUFFERS`; for clients `SSL_VERIFY_NONE` (trust is evaluated by
    /// `ServerTrustManager`); for servers the certificate source.
    public init(configuration: TLSConfiguration) throws(TLSError) {
        func invalid(_ context: String) -> TLSError {
            let (full, reasons) = OpenSSLErrorQueue.drainDetailed()
            let reason = reasons.isEmpty ? context : "\(context): \(reasons.joined(separator: "; "))"
            return TLSError(kind: .invalidConfiguration, reason: reason, openSSLErrors: full)
        }
        OpenSSLErrorQueue.clear()
        let method = configuration.role == .client ? TLS_client_method() : TLS_server_method()
        guard let context = SSL_CTX_new(method) else { throw invalid("SSL_CTX_new failed") }
        var handedOver = false
        defer { if !handedOver { SSL_CTX_free(context) } }

        if let maximum = configuration.maximumVersion, maximum < configuration.minimumVersion {
            throw TLSError(kind: .invalidConfiguration,
                           reason: "maximum TLS version \(maximum.rawValue) is below the minimum \(configuration.minimumVersion.rawValue)")
        }
        guard lookout_SSL_CTX_set_min_proto_version(context, configuration.minimumVersion.openSSLValue) == 1 else {
            throw invalid("cannot set minimum version \(configuration.minimumVersion.rawValue)")
        }
        if let maximum = configuration.maximumVersion {
            guard lookout_SSL_CTX_set_max_proto_version(context, maximum.openSSLValue) == 1 else {
                throw invalid("cannot set maximum version \(maximum.rawValue)")
            }
        }
        var options = lookout_SSL_OP_NO_COMPRESSION() | lookout_SSL_OP_NO_RENEGOTIATION()
        if configuration.role == .server { options |= lookout_SSL_OP_CIPHER_SERVER_PREFERENCE() }
        _ = SSL_CTX_set_options(context, options)
        _ = lookout_SSL_CTX_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))

        var alpnWire: [UInt8] = []
        for name in configuration.applicationProtocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError(kind: .invalidConfiguration, reason: "ALPN protocol name \"\(name)\" must be 1 to 255 bytes (RFC 7301 §3.1)")
            }
            alpnWire.append(UInt8(bytes.count))
            alpnWire += bytes
        }

        switch configuration.role {
        case .client:
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            // SSL_CTX_set_alpn_protos returns 0 on success.
            if !alpnWire.isEmpty, SSL_CTX_set_alpn_protos(context, alpnWire, UInt32(alpnWire.count)) != 0 {
                throw invalid("cannot set ALPN protocols")
            }
            sessions = configuration.sessionCacheCapacity > 0
                ? Guarded(LRUDictionary(capacity: configuration.sessionCacheCapacity)) : nil
        case .server:
            sessions = nil
            let sessionContext = Array("lookout".utf8)
            _ = SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count))
            switch configuration.certificateSource {
            case .none:
                throw TLSError(kind: .invalidConfiguration, reason: "a server configuration needs a certificate source")
            case .fixed(let chain, let key):
                guard let leaf = chain.first else {
                    throw TLSError(kind: .invalidConfiguration, reason: "the server certificate chain is empty")
                }
                guard SSL_CTX_use_certificate(context, leaf.x509) == 1 else { throw invalid("SSL_CTX_use_certificate failed") }
                guard SSL_CTX_use_PrivateKey(context, key.pkey) == 1 else { throw invalid("SSL_CTX_use_PrivateKey failed") }
                guard SSL_CTX_check_private_key(context) == 1 else { throw invalid("the private key does not match the certificate") }
                for certificate in chain.dropFirst() {
                    guard lookout_SSL_CTX_add1_chain_cert(context, certificate.x509) == 1 else {
                        throw invalid("cannot add \(certificate.subject) to the chain")
                    }
                }
            case .perServerName:
                break
            }
            if !configuration.clientCertificateAuthorities.isEmpty {
                // RFC 8446 §4.3.2: a CertificateRequest naming these CAs; a client certificate, when
                // sent, is verified against them (its absence is the application's to judge).
                guard let store = X509_STORE_new() else { throw invalid("X509_STORE_new failed") }
                for authority in configuration.clientCertificateAuthorities {
                    _ = X509_STORE_add_cert(store, authority.x509)
                    _ = SSL_CTX_add_client_CA(context, authority.x509)
                }
                SSL_CTX_set_cert_store(context, store)
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            }
        }
        TLSCallbacks.install(on: context, for: configuration)
        self.configuration = configuration
        self.context = context
        handedOver = true
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// A client connection to `serverName` (a DNS name or IP literal). SNI is sent for DNS
    /// names only (RFC 6066 §3 forbids IP literals). A session previously cached under
    /// `sessionCacheKey` (default: `serverName`) is offered for resumption.
    public func makeClientConnection(serverName: String?, sessionCacheKey: String? = nil) throws(TLSError) -> TLSConnection {
        precondition(configuration.role == .client, "makeClientConnection on a server engine")
        return try TLSConnection(engine: self, serverName: serverName.map(HostName.normalize),
                                 sessionCacheKey: sessionCacheKey ?? serverName.map(HostName.normalize))
    }

    /// A server connection. `fallbackServerName` is handed to a per-SNI certificate
    /// selector when the client sends no SNI (an intercepting proxy passes the CONNECT host).
    public func makeServerConnection(fallbackServerName: String? = nil) throws(TLSError) -> TLSConnection {
        precondition(configuration.role == .server, "makeServerConnection on a client engine")
        return try TLSConnection(engine: self, serverName: fallbackServerName, sessionCacheKey: nil)
    }

    /// The number of hosts with a cached session (client engines).
    public var cachedSessionCount: Int {
        sessions?.withLock { $0.count } ?? 0
    }

    /// Forgets the cached session for `key`.
    public func removeCachedSession(for key: String) {
        _ = sessions?.withLock { $0.remove(key) }
    }

    func cachedSession(for key: String) -> SSLSession? {
        sessions?.withLock { $0.value(for: key) }
    }

    func storeSession(_ session: SSLSession, for key: String) {
        sessions?.withLock { _ = $0.set(session, for: key) }
    }
}
