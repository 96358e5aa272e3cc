import CLookoutSSL

/// One TLS connection over memory BIOs: no sockets, the caller moves the bytes.
///
/// The loop: bytes from the peer go in with `receiveCiphertext(_:)`; `handshake()`,
/// `readPlaintext(into:)`, `writePlaintext(_:)` and `shutdown()` do the TLS work; after
/// every one of those calls, whatever `takeCiphertext()` returns must be sent to the peer
/// (handshake messages, records, alerts, tickets, close_notify).
///
/// Not thread-safe: use a connection from one thread or serial queue at a time. It owns its
/// `SSL` (and through it both BIOs) and frees everything in `deinit`; it keeps its
/// `TLSEngine` alive.
public final class TLSConnection: @unchecked Sendable {
    /// The engine this connection was made by.
    public let engine: TLSEngine
    /// Which side of the handshake this connection plays.
    public var role: TLSConfiguration.Role { engine.configuration.role }

    let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    /// Client: the host connected to. Server: the fallback name for certificate selection.
    private let hostName: String?
    private let sessionCacheKey: String?
    private var offeredSession: Bool = false
    private var lastStoredSession: OpaquePointer?
    private var failure: TLSError?
    private var selectionFailure: String?
    private var fatalAlertReceived: String?
    private var fatalAlertSent: String?

    init(engine: TLSEngine, serverName: String?, sessionCacheKey: String?) throws(TLSError) {
        OpenSSLErrorQueue.clear()
        guard let ssl = SSL_new(engine.context) else {
            throw TLSError(kind: .invalidConfiguration, reason: OpenSSLErrorQueue.message("SSL_new failed"))
        }
        let readBIO = BIO_new(BIO_s_mem())
        let writeBIO = BIO_new(BIO_s_mem())
        guard let readBIO, let writeBIO else {
            if let readBIO { BIO_free(readBIO) }
            if let writeBIO { BIO_free(writeBIO) }
            SSL_free(ssl)
            throw TLSError(kind: .invalidConfiguration, reason: OpenSSLErrorQueue.message("BIO_new failed"))
        }
        SSL_set_bio(ssl, readBIO, writeBIO)  // the SSL now owns both BIOs
        self.engine = engine
        self.ssl = ssl
        self.readBIO = readBIO
        self.writeBIO = writeBIO
        self.hostName = serverName
        self.sessionCacheKey = sessionCacheKey
        SSL_set_ex_data(ssl, TLSCallbacks.exDataIndex, Unmanaged.passUnretained(self).toOpaque())

        switch engine.configuration.role {
        case .client:
            SSL_set_connect_state(ssl)
            if let serverName, !HostName.isIPAddress(serverName) {
                guard lookout_SSL_set_tlsext_host_name(ssl, serverName) == 1 else {
                    throw TLSError(kind: .invalidConfiguration, reason: OpenSSLErrorQueue.message("cannot set SNI \"\(serverName)\""))
                }
            }
            // Costs the server a few bytes when it has a response; the revocation evaluator needs it.
            _ = lookout_SSL_request_ocsp_status(ssl)
            if let sessionCacheKey, let session = engine.cachedSession(for: sessionCacheKey) {
                // SSL_set_session takes its own reference.
                offeredSession = SSL_set_session(ssl, session.pointer) == 1
                lastStoredSession = session.pointer
            }
        case .server:
            SSL_set_accept_state(ssl)
        }
    }

    deinit {
        // No callback may reach this object once it is being torn down.
        SSL_set_ex_data(ssl, TLSCallbacks.exDataIndex, nil)
        SSL_free(ssl)
    }

    // MARK: - Ciphertext in and out

    /// Hands bytes received from the peer to OpenSSL.
    public func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let chunk = min(remaining, Int(Int32.max))
            let written = BIO_write(readBIO, base, Int32(chunk))
            precondition(written == Int32(chunk), "memory BIO write failed")
            base += chunk
            remaining -= chunk
        }
    }

    /// Hands bytes received from the peer to OpenSSL.
    public func receiveCiphertext(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receiveCiphertext($0) }
    }

    /// Tells OpenSSL the transport reached end of stream: once buffered input is used up,
    /// reads fail with `unexpectedEOF` unless close_notify arrived first.
    public func receiveEndOfStream() {
        _ = lookout_BIO_set_mem_eof_return(readBIO, 0)
    }

    /// Removes and returns every byte OpenSSL has queued for the peer.
    public func takeCiphertext() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(writeBIO))
        guard pending > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
            let read = BIO_read(writeBIO, buffer.baseAddress, Int32(pending))
            count = max(0, Int(read))
        }
    }

    /// Moves up to `buffer.count` queued bytes into `buffer`; returns how many.
    public func takeCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0, BIO_ctrl_pending(writeBIO) > 0 else { return 0 }
        return max(0, Int(BIO_read(writeBIO, base, Int32(min(buffer.count, Int(Int32.max))))))
    }

    /// Bytes queued for the peer (what `takeCiphertext()` would return).
    public var pendingCiphertextCount: Int { Int(BIO_ctrl_pending(writeBIO)) }

    /// Bytes received from the peer that OpenSSL has not consumed yet.
    public var bufferedCiphertextCount: Int { Int(BIO_ctrl_pending(readBIO)) }

    // MARK: - TLS operations

    /// Advances the handshake with the ciphertext received so far.
    public func handshake() -> TLSHandshakeStatus {
        if let failure { return .failed(failure) }
        if SSL_is_init_finished(ssl) == 1 { return .complete }
        OpenSSLErrorQueue.clear()
        let result = SSL_do_handshake(ssl)
        let code = SSL_get_error(ssl, result)  // immediately, before anything else touches the queue
        if result == 1 {
            captureSession()
            return .complete
        }
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantIO
        default:
            return .failed(fail(code))
        }
    }

    /// Whether the handshake has completed.
    public var isHandshakeComplete: Bool { SSL_is_init_finished(ssl) == 1 }

    /// Decrypts buffered records into `buffer`. Call until it returns `.wantsRead`: one
    /// call returns at most one record's worth. Post-handshake messages (TLS 1.3 session
    /// tickets, key updates) are processed here too.
    public func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> TLSReadResult {
        if let failure { throw failure }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .wantsRead }
        OpenSSLErrorQueue.clear()
        var count = 0
        let result = SSL_read_ex(ssl, base, buffer.count, &count)
        if result == 1 {
            captureSession()
            return .bytes(count)
        }
        // Asked only after a failure: a success needs no explanation (and this runs per record).
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            captureSession()
            return .wantsRead
        case SSL_ERROR_ZERO_RETURN:
            return .closed
        default:
            throw fail(code)
        }
    }

    /// Encrypts `bytes` into records queued for the peer; returns the count accepted, which
    /// is all of them once the handshake is complete and 0 before.
    @discardableResult
    public func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws(TLSError) -> Int {
        if let failure { throw failure }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        OpenSSLErrorQueue.clear()
        var written = 0
        let result = SSL_write_ex(ssl, base, bytes.count, &written)
        if result == 1 { return written }
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return 0
        default:
            throw fail(code)
        }
    }

    /// Encrypts `bytes`; see `writePlaintext(_:)` for buffers.
    @discardableResult
    public func writePlaintext(_ bytes: [UInt8]) throws(TLSError) -> Int {
        let result: Result<Int, TLSError> = bytes.withUnsafeBytes { raw in
            do throws(TLSError) { return .success(try writePlaintext(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Queues close_notify (RFC 8446 §6.1). Send `takeCiphertext()` afterwards.
    @discardableResult
    public func shutdown() -> TLSShutdownStatus {
        guard failure == nil, SSL_is_init_finished(ssl) == 1 else { return .skipped }
        OpenSSLErrorQueue.clear()
        let result = SSL_shutdown(ssl)
        _ = SSL_get_error(ssl, result)
        OpenSSLErrorQueue.clear()
        switch result {
        case 1: return .closed
        case 0: return .closeNotifySent
        default: return (SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN) != 0 ? .closeNotifySent : .skipped
        }
    }

    /// Whether the peer's close_notify has arrived.
    public var receivedCloseNotify: Bool {
        (SSL_get_shutdown(ssl) & SSL_RECEIVED_SHUTDOWN) != 0
    }

    /// The failure that ended this connection, if any.
    public var error: TLSError? { failure }

    // MARK: - Negotiated parameters

    /// The negotiated version as OpenSSL names it ("TLSv1.3"), once the handshake completed.
    public var negotiatedProtocolVersion: String? {
        guard isHandshakeComplete, let name = SSL_get_version(ssl) else { return nil }
        return String(cString: name)
    }

    /// The negotiated version, once the handshake completed.
    public var negotiatedVersion: TLSProtocolVersion? {
        guard isHandshakeComplete else { return nil }
        return TLSProtocolVersion(openSSLValue: SSL_version(ssl))
    }

    /// The negotiated cipher suite in OpenSSL's naming ("TLS_AES_256_GCM_SHA384",
    /// "ECDHE-ECDSA-AES128-GCM-SHA256").
    public var cipherSuite: String? {
        guard isHandshakeComplete, let cipher = SSL_get_current_cipher(ssl), let name = SSL_CIPHER_get_name(cipher) else { return nil }
        return String(cString: name)
    }

    /// The ALPN protocol both sides agreed on (RFC 7301), if any.
    public var applicationProtocol: String? {
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Server: the SNI host name the client sent. Client: the SNI this side sent.
    public var serverName: String? {
        SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
    }

    /// The peer's certificates as presented, leaf first (on a server: the client's, if it
    /// sent any). Available after the handshake, also for resumed sessions.
    /// A server's client: the subject of the certificate it presented (verified against the
    /// engine's client authorities), in RFC 2253 form; nil when it presented none.
    public var peerCertificateSubject: String? {
        guard let leaf = SSL_get0_peer_certificate(ssl) else { return nil }
        return Certificate(retaining: leaf).subjectRFC2253
    }

    public var peerCertificateChain: [Certificate] {
        var chain: [Certificate] = []
        let leaf = SSL_get0_peer_certificate(ssl)
        if let leaf { chain.append(Certificate(retaining: leaf)) }
        if let stack = SSL_get_peer_cert_chain(ssl) {
            for index in 0..<lookout_sk_X509_num(stack) {
                guard let x509 = lookout_sk_X509_value(stack, index) else { continue }
                // A client's stack starts with the leaf; a server's does not.
                if index == 0, let leaf, X509_cmp(x509, leaf) == 0 { continue }
                chain.append(Certificate(retaining: x509))
            }
        }
        return chain
    }

    /// Client: the DER OCSP response the server stapled to its certificate (RFC 6066 §8), or
    /// nil when it sent none.
    public var stapledOCSPResponse: [UInt8]? {
        var data: UnsafePointer<UInt8>? = nil
        let length = lookout_SSL_get_ocsp_response(ssl, &data)
        guard length > 0, let data else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    /// Whether the handshake resumed a cached session (abbreviated handshake).
    public var didResumeSession: Bool { SSL_session_reused(ssl) == 1 }

    /// The certificate to offer if the server asks for one (client connections); set before the
    /// handshake starts.
    public var clientIdentity: ClientIdentity?
    /// The server sent a CertificateRequest.
    public private(set) var clientCertificateRequested = false
    /// The identity sent in answer to it, if any.
    public private(set) var clientCertificateSent: ClientIdentity?

    /// From the client-certificate callback: hands OpenSSL the leaf and key (it takes one
    /// reference to each) and adds the chain to this connection. 1 = send it, 0 = send none.
    func provideClientCertificate(x509: UnsafeMutablePointer<OpaquePointer?>?,
                                  pkey: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
        clientCertificateRequested = true
        guard let identity = clientIdentity, let x509, let pkey else { return 0 }
        for certificate in identity.chain.dropFirst() {
            guard lookout_SSL_add1_chain_cert(ssl, certificate.x509) == 1 else { return 0 }
        }
        guard X509_up_ref(identity.chain[0].x509) == 1 else { return 0 }
        guard EVP_PKEY_up_ref(identity.key.pkey) == 1 else {
            X509_free(identity.chain[0].x509)
            return 0
        }
        x509.pointee = identity.chain[0].x509
        pkey.pointee = identity.key.pkey
        clientCertificateSent = identity
        return 1
    }

    /// The fatal alert received from the peer, e.g. "handshake failure".
    public var alertReceived: String? { fatalAlertReceived }

    /// The fatal alert this side sent, e.g. "unrecognized name".
    public var alertSent: String? { fatalAlertSent }

    // MARK: - Internals

    /// Records the failure for `code` and returns it. After `SSL_ERROR_SSL` or
    /// `SSL_ERROR_SYSCALL` OpenSSL must not be used again except to free it.
    private func fail(_ code: Int32) -> TLSError {
        let (full, reasons) = OpenSSLErrorQueue.drainDetailed()
        let kind: TLSError.Kind
        var reason = reasons.joined(separator: "; ")
        if let selectionFailure {
            kind = .certificateSelectionFailed
            reason = reason.isEmpty ? selectionFailure : "\(selectionFailure); \(reason)"
        } else if reasons.contains("unexpected eof while reading") || (code == SSL_ERROR_SYSCALL && full.isEmpty) {
            kind = .unexpectedEOF
            if reason.isEmpty { reason = "the peer closed the connection without close_notify" }
        } else {
            kind = isHandshakeComplete ? .protocolError : .handshakeFailed
        }
        if reason.isEmpty {
            reason = fatalAlertReceived.map { "alert received: \($0)" } ?? "SSL error \(code)"
        }
        let error = TLSError(kind: kind, reason: reason, openSSLErrors: full, alertReceived: fatalAlertReceived,
                             alertSent: fatalAlertSent, sslErrorCode: code)
        failure = error
        if offeredSession, !isHandshakeComplete, let sessionCacheKey {
            engine.removeCachedSession(for: sessionCacheKey)
        }
        return error
    }

    /// Client: keeps the current session for resumption once it is resumable. With TLS 1.3
    /// that is only after a NewSessionTicket (RFC 8446 §4.6.1) arrived post-handshake, and
    /// OpenSSL replaces the session object for each ticket, so this runs after reads too.
    private func captureSession() {
        guard role == .client, let sessionCacheKey, isHandshakeComplete,
              let session = SSL_get_session(ssl), session != lastStoredSession,
              SSL_SESSION_is_resumable(session) == 1,
              // A copy: OpenSSL marks the live session unresumable when this connection later
              // ends without close_notify, which many servers do.
              let owned = SSL_SESSION_dup(session) else { return }
        lastStoredSession = session
        engine.storeSession(SSLSession(taking: owned), for: sessionCacheKey)
    }

    /// From the info callback: remembers fatal alerts (close_notify is not a failure).
    func noteInfo(location: Int32, value: Int32) {
        guard location & SSL_CB_ALERT != 0 else { return }
        let description = Int32(value & 0xff)
        guard description != SSL_AD_CLOSE_NOTIFY, let text = SSL_alert_desc_string_long(value) else { return }
        if location & SSL_CB_READ != 0 {
            fatalAlertReceived = String(cString: text)
        } else {
            fatalAlertSent = String(cString: text)
        }
    }

    /// From the ALPN callback: the first of the server's protocols the client offered.
    func selectApplicationProtocol(out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                                   outLength: UnsafeMutablePointer<UInt8>?,
                                   offered: UnsafePointer<UInt8>?, offeredLength: UInt32) -> Int32 {
        guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_NOACK }
        // Offers are length-prefixed names (RFC 7301 §3.1). The selection points into the
        // client's buffer, which OpenSSL copies before the callback's caller returns.
        var offers: [(start: Int, bytes: [UInt8])] = []
        var index = 0
        let total = Int(offeredLength)
        while index < total {
            let length = Int(offered[index])
            guard length > 0, index + 1 + length <= total else { break }
            offers.append((index + 1, Array(UnsafeBufferPointer(start: offered + index + 1, count: length))))
            index += 1 + length
        }
        for name in engine.configuration.applicationProtocols {
            let wanted = Array(name.utf8)
            if let match = offers.first(where: { $0.bytes == wanted }) {
                out.pointee = offered + match.start
                outLength.pointee = UInt8(wanted.count)
                return SSL_TLSEXT_ERR_OK
            }
        }
        // RFC 7301 §3.2: no overlap → fatal no_application_protocol alert.
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }

    /// From the servername callback: installs the chain the selector picks for the SNI.
    func selectServerCertificate(alert: UnsafeMutablePointer<Int32>?) -> Int32 {
        guard case .perServerName(let selector) = engine.configuration.certificateSource else { return SSL_TLSEXT_ERR_OK }
        let sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
        let name = sni ?? hostName
        do {
            let (chain, key) = try selector(name)
            guard let leaf = chain.first else {
                throw CertificateError(.generationFailed, "the selector returned an empty chain")
            }
            guard SSL_use_certificate(ssl, leaf.x509) == 1, SSL_use_PrivateKey(ssl, key.pkey) == 1,
                  SSL_check_private_key(ssl) == 1 else {
                throw CertificateError.openSSL(.keyMismatch, "cannot install the certificate for \(name ?? "(no name)")")
            }
            _ = lookout_SSL_clear_chain_certs(ssl)
            for certificate in chain.dropFirst() {
                _ = lookout_SSL_add1_chain_cert(ssl, certificate.x509)
            }
            return SSL_TLSEXT_ERR_OK
        } catch {
            selectionFailure = "certificate selection for \(name.map { "\"\($0)\"" } ?? "a client without SNI") failed: \(error)"
            alert?.pointee = name == nil ? SSL_AD_UNRECOGNIZED_NAME : SSL_AD_INTERNAL_ERROR
            return SSL_TLSEXT_ERR_ALERT_FATAL
        }
    }
}
