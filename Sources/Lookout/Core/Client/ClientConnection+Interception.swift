import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS

/// An intercepted CONNECT: the client's TLS is terminated with a leaf from the local CA, and the
/// requests inside run through the same parser and exchanges, toward the CONNECT's origin.
extension ClientConnection {
    // MARK: - Interception

    /// Answers the CONNECT, then terminates the client's TLS with a leaf for its SNI (or the
    /// CONNECT host). The handshake starts on the next turn of the loop, once whatever arrived
    /// behind the CONNECT head has been set aside: it is the start of the ClientHello.
    func beginInterception(_ head: RequestHead, requestID: UInt64, origin: Origin, engine: TLSEngine,
                                   plain: Connection) {
        timer.cancel()
        plain.write(Tunnel.established)
        plain.pauseReading()
        isAwaitingClientHandshake = true
        interceptedOrigin = origin
        parser = HTTPRequestParser(limits: session.configuration.parserLimits)
        let start = Instant.now()
        connection.loop.execute { [weak self] in
            guard let self, !isClosed else { return }
            let tls: TLSConnection
            do {
                tls = try engine.makeServerConnection(fallbackServerName: origin.host)
            } catch {
                interceptionFailed(.clientFailed(reason: .tlsHandshakeFailed("\(error)")), head: head,
                                   requestID: requestID, origin: origin, serverName: nil, start: start)
                return
            }
            let stream = TLSStream(transport: plain, tls: tls)
            connection = stream
            let early = stash
            stash = []
            stream.startHandshake(timeout: session.configuration.timeouts.tlsHandshake, initialCiphertext: early) {
                [weak self] result in
                guard let self, !isClosed else { return }
                isAwaitingClientHandshake = false
                switch result {
                case .success:
                    stream.delegate = self
                    let id = self.id
                    session.emit(EventContext(connectionID: id), ConnectionDidCompleteClientTLSHandshake(
                        serverName: tls.serverName, version: tls.negotiatedProtocolVersion ?? "",
                        cipher: tls.cipherSuite ?? "", applicationProtocol: tls.applicationProtocol))
                    armIdleTimer()
                    resumeInput()
                case .failure(.timedOut(let after)):
                    interceptionFailed(.clientFailed(reason: .tlsHandshakeTimedOut(after: after)), head: head,
                                       requestID: requestID, origin: origin, serverName: tls.serverName, start: start)
                case .failure(let failure):
                    interceptionFailed(.clientFailed(reason: .tlsHandshakeFailed(Self.describe(failure))), head: head,
                                       requestID: requestID, origin: origin, serverName: tls.serverName, start: start)
                }
            }
        }
    }

    /// "the client sent alert: unknown ca" reads better than OpenSSL's error stack alone.
    static func describe(_ failure: TLSHandshakeFailure) -> String {
        guard case .tls(let error) = failure else { return failure.description }
        if let alert = error.alertReceived { return "the client sent alert \"\(alert)\" (\(error.reason))" }
        return error.reason
    }

    /// The intercepted client's handshake failed: one record for the CONNECT, then close.
    func interceptionFailed(_ error: ProxyError, head: RequestHead, requestID: UInt64, origin: Origin,
                                    serverName: String?, start: Instant) {
        isAwaitingClientHandshake = false
        let id = self.id
        session.emit(EventContext(connectionID: id), ConnectionDidFailClientTLSHandshake(serverName: serverName, error: error))
        session.emit(EventContext(connectionID: id, requestID: requestID), RequestDidFailToCreateRequest(error: error))
        var summary = ExchangeSummary(requestID: requestID, connectionID: id, clientAddress: clientAddress, kind: .intercepted,
                                      method: head.method.rawValue, url: origin.authority,
                                      httpVersion: head.version.description, start: start)
        summary.status = 200
        summary.error = error
        records.finish(summary)
        close(reason: "client_tls_failed")
    }

}
