import HTTPTypes
import LookoutHTTP
import LookoutHTTP2
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// An intercepted CONNECT: the client's TLS is terminated with a leaf from the local CA, and the
/// requests inside run through the same parser and exchanges, toward the CONNECT's origin.
extension ClientConnection {
    // MARK: - Interception

    /// Answers the CONNECT, then terminates the client's TLS with a leaf for its SNI (or the
    /// CONNECT host). The handshake starts on the next turn of the loop, once whatever arrived
    /// behind the CONNECT head has been set aside: it is the start of the ClientHello.
    func beginInterception(_ head: RequestHead, requestID: UInt64, origin: Origin, engine: TLSEngine,
                                   plain: Connection, established: Bool = false) {
        timer.cancel()
        if !established { plain.write(Tunnel.established) }
        plain.pauseReading()
        isAwaitingClientHandshake = true
        interceptedOrigin = origin
        parser = HTTPRequestParser(limits: environment.parserLimits)
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
            stream.fingerprintsClientHello = true
            connection = stream
            let early = stash
            stash = []
            stream.startHandshake(timeout: environment.timeouts.tlsHandshake, initialCiphertext: early) {
                [weak self] result in
                guard let self, !isClosed else { return }
                isAwaitingClientHandshake = false
                // Every record of this connection names its client's ClientHello, a refused handshake's too.
                records.clientJA4 = stream.clientJA4
                switch result {
                case .success:
                    stream.delegate = self
                    let id = self.id
                    environment.exchanges.emit(EventContext(connectionID: id), ConnectionDidCompleteClientTLSHandshake(
                        serverName: tls.serverName, version: tls.negotiatedProtocolVersion ?? "",
                        cipher: tls.cipherSuite ?? "", applicationProtocol: tls.applicationProtocol))
                    if tls.applicationProtocol == "h2" {
                        startHTTP2(on: stream, origin: origin)
                        return
                    }
                    armIdleTimer()
                    resumeInput()
                case .failure(.timedOut(let after)):
                    interceptionFailed(.clientFailed(reason: .tlsHandshakeTimedOut(after: after)), head: head,
                                       requestID: requestID, origin: origin, serverName: tls.serverName, start: start)
                case .failure(let failure):
                    if let alert = Self.refusal(of: failure, sawHello: stream.clientJA4 != nil) {
                        clientRejected(serverName: tls.serverName, ja4: stream.clientJA4, alert: alert, origin: origin)
                    }
                    interceptionFailed(.clientFailed(reason: .tlsHandshakeFailed(Self.describe(failure))), head: head,
                                       requestID: requestID, origin: origin, serverName: tls.serverName, start: start)
                }
            }
        }
    }

    /// The client chose `h2` in ALPN: from here on the connection is an HTTP/2 server (RFC 9113
    /// §3.2) whose streams run as exchanges toward `origin`. The connection's own timer stops;
    /// the HTTP/2 side keeps its own (idle, stalled windows).
    private func startHTTP2(on stream: TLSStream, origin: Origin) {
        timer.cancel()
        do {
            let side = try HTTP2ClientSide(stream: stream, environment: environment.exchanges, http2: environment.http2,
                                           access: environment.access, context: context, records: records,
                                           routing: .intercepted(origin), identity: identity, delegate: self)
            http2 = side
            side.start()
        } catch {
            environment.exchanges.emit(EventContext(connectionID: id), ConnectionDidEndHTTP2(
                code: HTTP2ErrorCode.internalError.registeredName, reason: "cannot start an HTTP/2 session: \(error)"))
            close(reason: "http2_error")
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
        environment.exchanges.emit(EventContext(connectionID: id), ConnectionDidFailClientTLSHandshake(serverName: serverName, error: error))
        records.refused(requestID: requestID, method: head.method.rawValue, url: origin.authority,
                        httpVersion: head.version.description, kind: .intercepted, error: error, status: 200,
                        start: start, headWasRead: false)
        close(reason: "client_tls_failed")
    }

}
