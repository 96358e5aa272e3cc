import Testing
import LookoutTLS

@Suite struct TLSEngineTests {
    let pki = TestPKI.shared

    func serverEngine(minimum: TLSProtocolVersion = .tls12, maximum: TLSProtocolVersion? = nil,
                      alpn: [String] = ["h2", "http/1.1"]) throws -> TLSEngine {
        try TLSEngine(configuration: .server(chain: [pki.leaf, pki.intermediate], key: pki.leafKey,
                                             minimumVersion: minimum, maximumVersion: maximum, applicationProtocols: alpn))
    }

    func clientEngine(minimum: TLSProtocolVersion = .tls12, maximum: TLSProtocolVersion? = nil,
                      alpn: [String] = ["h2", "http/1.1"]) throws -> TLSEngine {
        try TLSEngine(configuration: .client(minimumVersion: minimum, maximumVersion: maximum, applicationProtocols: alpn))
    }

    func exchangeData(_ pair: TLSPair) throws {
        // Client → server, including more than one record's worth.
        let request = Array("GET / HTTP/1.1\r\nHost: www.example.test\r\n\r\n".utf8)
        let bulk = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(try pair.client.writePlaintext(request) == request.count)
        #expect(try pair.client.writePlaintext(bulk) == bulk.count)
        pair.clientToServer()
        let atServer = try TLSPair.readAll(pair.server)
        #expect(atServer.bytes == request + bulk)
        #expect(!atServer.closed)
        // Server → client.
        let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        #expect(try pair.server.writePlaintext(response) == response.count)
        pair.serverToClient()
        let atClient = try TLSPair.readAll(pair.client)
        #expect(atClient.bytes == response)
    }

    func closeNotify(_ pair: TLSPair) throws {
        #expect(pair.client.shutdown() == .closeNotifySent)
        pair.clientToServer()
        let atServer = try TLSPair.readAll(pair.server)
        #expect(atServer.closed)
        #expect(pair.server.receivedCloseNotify)
        #expect(pair.server.shutdown() == .closed)
        pair.serverToClient()
        let atClient = try TLSPair.readAll(pair.client)
        #expect(atClient.closed)
        #expect(pair.client.receivedCloseNotify)
    }

    @Test(arguments: [TLSProtocolVersion.tls13, .tls12])
    func handshakeExchangeAndClose(version: TLSProtocolVersion) throws {
        let server = try serverEngine(maximum: version)
        let client = try clientEngine(minimum: version)
        let pair = TLSPair(client: try client.makeClientConnection(serverName: TestPKI.host),
                           server: try server.makeServerConnection())
        #expect(pair.client.negotiatedProtocolVersion == nil)
        let status = pair.handshake()
        #expect(status.client == .complete)
        #expect(status.server == .complete)
        for side in [pair.client, pair.server] {
            #expect(side.isHandshakeComplete)
            #expect(side.negotiatedVersion == version)
            #expect(side.negotiatedProtocolVersion == version.openSSLName)
            #expect(side.applicationProtocol == "h2")
            #expect(!side.didResumeSession)
        }
        #expect(pair.server.serverName == TestPKI.host)
        #expect(pair.client.serverName == TestPKI.host)
        if version == .tls13 {
            #expect(pair.client.cipherSuite?.hasPrefix("TLS_") == true)
        } else {
            #expect(pair.client.cipherSuite?.hasPrefix("ECDHE-ECDSA-") == true)
        }
        #expect(pair.client.cipherSuite == pair.server.cipherSuite)
        // The client sees the presented chain and a trust evaluation of it passes.
        let chain = pair.client.peerCertificateChain
        #expect(chain == [pki.leaf, pki.intermediate])
        #expect(pair.server.peerCertificateChain.isEmpty)
        try DefaultTrustEvaluator(trustStore: try pki.trustStore()).evaluate(chain, host: TestPKI.host)
        try exchangeData(pair)
        try closeNotify(pair)
        // After close, further reads keep reporting closed; shutdown is idempotent.
        #expect(try TLSPair.readAll(pair.client).closed)
    }

    @Test func alpnFollowsServerPreference() throws {
        let server = try serverEngine(alpn: ["http/1.1", "h2"])
        let client = try clientEngine(alpn: ["h2", "http/1.1"])
        let pair = TLSPair(client: try client.makeClientConnection(serverName: "a.example.test"), server: try server.makeServerConnection())
        #expect(pair.handshake() == (.complete, .complete))
        #expect(pair.client.applicationProtocol == "http/1.1")

        let noALPN = TLSPair(client: try clientEngine(alpn: []).makeClientConnection(serverName: "a.example.test"),
                             server: try server.makeServerConnection())
        #expect(noALPN.handshake() == (.complete, .complete))
        #expect(noALPN.client.applicationProtocol == nil)
    }

    @Test func alpnWithoutOverlapIsRefused() throws {
        let server = try serverEngine(alpn: ["http/1.1"])
        let client = try clientEngine(alpn: ["h2"])
        let pair = TLSPair(client: try client.makeClientConnection(serverName: "a.example.test"), server: try server.makeServerConnection())
        let status = pair.handshake()
        guard case .failed(let serverError) = status.server, case .failed(let clientError) = status.client else {
            Issue.record("expected both sides to fail: \(status)")
            return
        }
        #expect(serverError.alertSent == "no application protocol")
        #expect(clientError.alertReceived == "no application protocol")
    }

    @Test func sessionResumption() throws {
        for version in [TLSProtocolVersion.tls13, .tls12] {
            let server = try serverEngine(maximum: version)
            let client = try clientEngine(minimum: version)
            let first = TLSPair(client: try client.makeClientConnection(serverName: TestPKI.host), server: try server.makeServerConnection())
            #expect(first.handshake() == (.complete, .complete))
            try exchangeData(first)   // TLS 1.3 tickets arrive after the handshake, with data
            #expect(client.cachedSessionCount == 1)

            let second = TLSPair(client: try client.makeClientConnection(serverName: TestPKI.host), server: try server.makeServerConnection())
            #expect(second.handshake() == (.complete, .complete))
            #expect(second.client.didResumeSession, "\(version)")
            #expect(second.server.didResumeSession, "\(version)")
            // The peer chain survives resumption, so trust can be evaluated again.
            #expect(second.client.peerCertificateChain == [pki.leaf, pki.intermediate])
            try exchangeData(second)
            try closeNotify(second)

            // Another host does not get that session.
            let other = TLSPair(client: try client.makeClientConnection(serverName: "other.example.test"), server: try server.makeServerConnection())
            #expect(other.handshake() == (.complete, .complete))
            #expect(!other.client.didResumeSession)
        }
    }

    @Test func resumptionCanBeDisabled() throws {
        let server = try serverEngine()
        let client = try TLSEngine(configuration: .client(sessionCacheCapacity: 0))
        for _ in 0..<2 {
            let pair = TLSPair(client: try client.makeClientConnection(serverName: TestPKI.host), server: try server.makeServerConnection())
            #expect(pair.handshake() == (.complete, .complete))
            try exchangeData(pair)
            #expect(!pair.client.didResumeSession)
        }
        #expect(client.cachedSessionCount == 0)
    }

    @Test func versionMismatchNamesTheProtocolVersion() throws {
        let server = try serverEngine(minimum: .tls13)
        let client = try clientEngine(maximum: .tls12)
        let pair = TLSPair(client: try client.makeClientConnection(serverName: TestPKI.host), server: try server.makeServerConnection())
        let status = pair.handshake()
        guard case .failed(let serverError) = status.server, case .failed(let clientError) = status.client else {
            Issue.record("expected both sides to fail: \(status)")
            return
        }
        #expect(serverError.kind == .handshakeFailed)
        #expect(serverError.reason.contains("unsupported protocol"))
        #expect(serverError.openSSLErrors.first?.hasPrefix("error:") == true)
        #expect(serverError.alertSent == "protocol version")
        #expect(clientError.kind == .handshakeFailed)
        #expect(clientError.reason.contains("protocol version"))
        #expect(clientError.alertReceived == "protocol version")
        #expect(String(describing: clientError).contains("alert received: protocol version"))
        #expect(pair.client.error == clientError)
        // A failed connection stays failed and sends nothing more.
        #expect(pair.client.handshake() == .failed(clientError))
        #expect(pair.client.shutdown() == .skipped)
        #expect(throws: TLSError.self) { try pair.client.writePlaintext([1, 2, 3]) }
    }

    @Test func garbageClientHelloFailsCleanly() throws {
        let server = try serverEngine()
        for garbage in [Array("GET / HTTP/1.1\r\nHost: example.test\r\n\r\n".utf8),
                        [UInt8](repeating: 0x16, count: 5) + [UInt8](repeating: 0xff, count: 300),
                        (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }] {
            let connection = try server.makeServerConnection()
            connection.receiveCiphertext(garbage)
            guard case .failed(let error) = connection.handshake() else {
                Issue.record("garbage accepted")
                continue
            }
            #expect(error.kind == .handshakeFailed)
            #expect(!error.reason.isEmpty)
            #expect(!error.openSSLErrors.isEmpty)
            _ = connection.takeCiphertext()   // an alert, maybe; must not crash
            #expect(connection.handshake() == .failed(error))
        }
        // A ClientHello cut short just waits for more.
        let client = try clientEngine().makeClientConnection(serverName: "x.example.test")
        _ = client.handshake()
        let hello = client.takeCiphertext()
        let connection = try server.makeServerConnection()
        connection.receiveCiphertext(Array(hello.prefix(hello.count / 2)))
        #expect(connection.handshake() == .wantIO)
        // …and end of stream then is an unexpected EOF.
        connection.receiveEndOfStream()
        guard case .failed(let eof) = connection.handshake() else {
            Issue.record("EOF mid-handshake not reported")
            return
        }
        #expect(eof.kind == .unexpectedEOF, "\(eof)")
    }

    @Test func truncationAfterHandshakeIsUnexpectedEOF() throws {
        let pair = TLSPair(client: try clientEngine().makeClientConnection(serverName: TestPKI.host),
                           server: try serverEngine().makeServerConnection())
        #expect(pair.handshake() == (.complete, .complete))
        pair.server.receiveEndOfStream()
        do {
            _ = try TLSPair.readAll(pair.server)
            Issue.record("truncation not reported")
        } catch {
            #expect(error.kind == .unexpectedEOF)
        }
    }

    @Test func perServerNameCertificatesFromTheCA() throws {
        let authority = try CertificateAuthority.create()
        let server = try TLSEngine(configuration: .server(applicationProtocols: ["http/1.1"]) { name in
            try authority.issueLeaf(for: name ?? "unknown.invalid")
        })
        let client = try clientEngine()
        let store = try TrustStore(anchors: [authority.certificate])
        for host in ["api.example.com", "cdn.example.net"] {
            let pair = TLSPair(client: try client.makeClientConnection(serverName: host), server: try server.makeServerConnection())
            #expect(pair.handshake() == (.complete, .complete))
            #expect(pair.server.serverName == host)
            let chain = pair.client.peerCertificateChain
            #expect(chain.first?.subjectAlternativeNames == [.dnsName(host)])
            #expect(chain.last == authority.certificate)
            try DefaultTrustEvaluator(trustStore: store).evaluate(chain, host: host)
            try exchangeData(pair)
        }
        // No SNI (an IP literal): the fallback name picks the certificate.
        let pair = TLSPair(client: try client.makeClientConnection(serverName: "192.0.2.10"),
                           server: try server.makeServerConnection(fallbackServerName: "192.0.2.10"))
        #expect(pair.handshake() == (.complete, .complete))
        #expect(pair.server.serverName == nil)
        #expect(pair.client.peerCertificateChain.first?.subjectAlternativeNames == [.ipAddress("192.0.2.10")])
        try DefaultTrustEvaluator(trustStore: store).evaluate(pair.client.peerCertificateChain, host: "192.0.2.10")
    }

    @Test func aFailingSelectorRefusesTheHandshake() throws {
        let server = try TLSEngine(configuration: .server { name in
            throw CertificateError(.invalidHost, "no certificate for \(name ?? "nil")")
        })
        let pair = TLSPair(client: try clientEngine().makeClientConnection(serverName: "refused.example.test"),
                           server: try server.makeServerConnection())
        let status = pair.handshake()
        guard case .failed(let serverError) = status.server, case .failed(let clientError) = status.client else {
            Issue.record("expected failure: \(status)")
            return
        }
        #expect(serverError.kind == .certificateSelectionFailed)
        #expect(serverError.reason.contains("no certificate for refused.example.test"))
        #expect(serverError.alertSent == "internal error")
        #expect(clientError.alertReceived == "internal error")

        // Without SNI and without a fallback name the alert is unrecognized_name.
        let anonymous = TLSPair(client: try clientEngine().makeClientConnection(serverName: nil), server: try server.makeServerConnection())
        guard case .failed(let error) = anonymous.handshake().server else {
            Issue.record("expected failure")
            return
        }
        #expect(error.alertSent == "unrecognized name")
    }

    @Test func clientRejectingTheCertificateIsReportedWithItsAlert() throws {
        // A client that does not trust the certificate aborts with a fatal alert. With TLS 1.2
        // that alert is a plaintext record, so it can be written by hand: fatal (2),
        // unknown_ca (48), RFC 5246 §7.2.
        let pair = TLSPair(client: try clientEngine(maximum: .tls12).makeClientConnection(serverName: TestPKI.host),
                           server: try serverEngine().makeServerConnection())
        _ = pair.client.handshake()
        pair.clientToServer()
        #expect(pair.server.handshake() == .wantIO)
        pair.server.receiveCiphertext([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 48])
        guard case .failed(let error) = pair.server.handshake() else {
            Issue.record("expected failure")
            return
        }
        #expect(error.kind == .handshakeFailed)
        #expect(error.alertReceived == "unknown CA")
        #expect(error.reason.contains("alert unknown ca"))
        #expect(pair.server.alertReceived == "unknown CA")
    }

    @Test func clientHangingUpMidHandshake() throws {
        let pair = TLSPair(client: try clientEngine().makeClientConnection(serverName: TestPKI.host),
                           server: try serverEngine().makeServerConnection())
        _ = pair.client.handshake()
        pair.clientToServer()
        #expect(pair.server.handshake() == .wantIO)
        pair.server.receiveEndOfStream()
        guard case .failed(let error) = pair.server.handshake() else {
            Issue.record("expected failure")
            return
        }
        #expect(error.kind == .unexpectedEOF)
    }

    @Test func invalidConfigurationsAreReported() throws {
        #expect(throws: TLSError.self) { try TLSEngine(configuration: TLSConfiguration(role: .server)) }
        #expect(throws: TLSError.self) { try TLSEngine(configuration: .server(chain: [], key: pki.leafKey)) }
        #expect(throws: TLSError.self) { try TLSEngine(configuration: .server(chain: [pki.leaf], key: pki.otherKey)) }
        #expect(throws: TLSError.self) { try TLSEngine(configuration: .client(minimumVersion: .tls13, maximumVersion: .tls12)) }
        #expect(throws: TLSError.self) { try TLSEngine(configuration: .client(applicationProtocols: [""])) }
        do {
            _ = try TLSEngine(configuration: .server(chain: [pki.leaf], key: pki.otherKey))
        } catch {
            #expect(error.kind == .invalidConfiguration)
            #expect(error.reason.contains("key"))
        }
    }

    @Test func manyHandshakesInALoop() throws {
        // Exercises every allocation path repeatedly; run under valgrind for a leak check.
        let server = try serverEngine()
        let client = try clientEngine()
        for index in 0..<50 {
            let pair = TLSPair(client: try client.makeClientConnection(serverName: "h\(index % 5).example.test"),
                               server: try server.makeServerConnection())
            #expect(pair.handshake() == (.complete, .complete))
            try exchangeData(pair)
            try closeNotify(pair)
            _ = pair.client.peerCertificateChain
        }
        #expect(client.cachedSessionCount == 5)
    }
}
