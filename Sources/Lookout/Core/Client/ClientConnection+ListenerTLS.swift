import LookoutIO
import LookoutModel
import LookoutTLS

/// A proxy listener with `tls`: the client's TLS is terminated with the listener's own
/// certificate before anything is parsed; the certificate it presents, verified against
/// `client_ca`, names it for the policy (`client_cert_subject`). What it then sends is what a
/// plain proxy listener gets: requests in absolute form, and CONNECT (relayed blind inside).
extension ClientConnection {
    func beginListenerTLS(_ engine: TLSEngine) {
        guard let plain = connection as? Connection else { return }
        let start = Instant.now()
        let tls: TLSConnection
        do {
            tls = try engine.makeServerConnection()
        } catch {
            listenerTLSFailed(.clientFailed(reason: .tlsHandshakeFailed("\(error)")), serverName: nil, start: start)
            return
        }
        let stream = TLSStream(transport: plain, tls: tls)
        connection = stream
        isAwaitingClientHandshake = true
        stream.startHandshake(timeout: environment.timeouts.tlsHandshake, initialCiphertext: []) { [weak self] result in
            guard let self, !isClosed else { return }
            isAwaitingClientHandshake = false
            switch result {
            case .success:
                stream.delegate = self
                certificateSubject = tls.peerCertificateSubject
                environment.exchanges.emit(EventContext(connectionID: id), ConnectionDidCompleteClientTLSHandshake(
                    serverName: tls.serverName, version: tls.negotiatedProtocolVersion ?? "",
                    cipher: tls.cipherSuite ?? "", applicationProtocol: tls.applicationProtocol))
                armIdleTimer()
                resumeInput()
            case .failure(.timedOut(let after)):
                listenerTLSFailed(.clientFailed(reason: .tlsHandshakeTimedOut(after: after)), serverName: tls.serverName, start: start)
            case .failure(let failure):
                listenerTLSFailed(.clientFailed(reason: .tlsHandshakeFailed(Self.describe(failure))), serverName: tls.serverName,
                                  start: start)
            }
        }
    }

    /// The handshake failed (a certificate `client_ca` does not verify, a client that does not
    /// trust the listener's): one record, then close.
    private func listenerTLSFailed(_ error: ProxyError, serverName: String?, start: Instant) {
        isAwaitingClientHandshake = false
        environment.exchanges.emit(EventContext(connectionID: id), ConnectionDidFailClientTLSHandshake(serverName: serverName, error: error))
        records.refused(requestID: environment.exchanges.makeRequestID(), method: "", url: connection.localAddress?.description ?? "",
                        httpVersion: "", kind: .http, error: error, status: nil, start: start, headWasRead: false)
        close(reason: "client_tls_failed")
    }
}
