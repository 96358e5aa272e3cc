import Dispatch
import Synchronization
import Testing
import LookoutIO
import LookoutTLS
#if canImport(Glibc)
import Glibc
#endif

/// Two TLS streams over a real socket pair on one event loop: the same code path the proxy uses
/// for intercepted clients (server side) and https origins (client side).
@Suite(.serialized) struct TLSStreamTests {
    private static let authority = try! CertificateAuthority.create()

    private struct Pair {
        let group: EventLoopGroup
        let client: TLSStream
        let server: TLSStream
        var loop: EventLoop { group.loops[0] }
    }

    private func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        return (fds[0], fds[1])
    }

    private func makePair(minimumServerVersion: TLSProtocolVersion = .tls12,
                          maximumClientVersion: TLSProtocolVersion? = nil) throws -> Pair {
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let (a, b) = socketPair()
        let clientEngine = try TLSEngine(configuration: .client(maximumVersion: maximumClientVersion,
                                                                applicationProtocols: ["http/1.1"]))
        let authority = Self.authority
        let serverEngine = try TLSEngine(configuration: .server(
            minimumVersion: minimumServerVersion, applicationProtocols: ["http/1.1"],
            certificateSelector: { name in try authority.issueLeaf(for: name ?? "localhost") }))
        let client = TLSStream(transport: Connection(fd: a, loop: loop, id: 1),
                               tls: try clientEngine.makeClientConnection(serverName: "localhost"))
        let server = TLSStream(transport: Connection(fd: b, loop: loop, id: 2),
                               tls: try serverEngine.makeServerConnection())
        return Pair(group: group, client: client, server: server)
    }

    /// Runs `body` on the loop and waits for it.
    private func onLoop<T>(_ pair: Pair, _ body: @escaping () -> T) -> T {
        nonisolated(unsafe) var result: T?
        pair.loop.queue.sync { pair.loop.runBatch { result = body() } }
        return result!
    }

    private func handshake(_ pair: Pair, timeout: Double = 5) async -> (client: Result<Void, TLSHandshakeFailure>,
                                                                         server: Result<Void, TLSHandshakeFailure>) {
        let results = Mutex<[Int: Result<Void, TLSHandshakeFailure>]>([:])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            func record(_ side: Int, _ result: Result<Void, TLSHandshakeFailure>) {
                let complete = results.withLock { $0[side] = result; return $0.count == 2 }
                if complete { done.resume() }
            }
            onLoop(pair) {
                pair.server.startHandshake(timeout: timeout) { record(1, $0) }
                pair.client.startHandshake(timeout: timeout) { record(0, $0) }
            }
        }
        return results.withLock { ($0[0]!, $0[1]!) }
    }

    private func waitUntil(_ pair: Pair, seconds: Double = 5, _ condition: @escaping () -> Bool) async -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < deadline {
            if onLoop(pair, condition) { return true }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        // Once more: a sleep that overslept the deadline (a busy machine) must not count.
        return onLoop(pair, condition)
    }

    @Test func bytesCrossBothWaysIntactWithBackpressure() async throws {
        let pair = try makePair()
        let outcome = await handshake(pair)
        #expect((try? outcome.client.get()) != nil)
        #expect((try? outcome.server.get()) != nil)
        let serverSide = StreamRecorder()
        let clientSide = StreamRecorder()
        // 3 MiB with a pattern, so a lost, repeated or reordered record would show.
        let payload = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 12)) }
        let accepted = onLoop(pair) { () -> Bool in
            pair.server.delegate = serverSide
            pair.client.delegate = clientSide
            pair.server.resumeReading()
            pair.client.resumeReading()
            #expect(pair.client.tls.applicationProtocol == "http/1.1")
            return pair.client.write(payload)
        }
        // A socket pair holds far less than 3 MiB: the write must report backpressure.
        #expect(!accepted)
        #expect(await waitUntil(pair) { serverSide.received.count == payload.count })
        #expect(serverSide.received == payload)
        #expect(await waitUntil(pair) { clientSide.drains > 0 })
        // And back, then a clean close: close_notify is an end of stream, not an error.
        onLoop(pair) {
            pair.server.write(Array("pong".utf8))
            pair.server.shutdownWrite()
        }
        #expect(await waitUntil(pair) { clientSide.sawEOF })
        #expect(clientSide.received == Array("pong".utf8))
        #expect(clientSide.failure == nil)
        onLoop(pair) {
            pair.client.close()
            pair.server.close()
        }
    }

    @Test func smallWritesOfOneBatchLeaveAsOneRecord() async throws {
        let pair = try makePair()
        _ = await handshake(pair)
        let serverSide = StreamRecorder()
        // A response head, its body and ten small chunks, written in one turn of the loop.
        let pieces: [[UInt8]] = [Array(repeating: 0x48, count: 240), Array(repeating: 0x62, count: 1024)]
            + (0..<10).map { Array(repeating: UInt8($0), count: 50) }
        let expected = pieces.flatMap { $0 }
        let before = onLoop(pair) { () -> UInt64 in
            pair.server.delegate = serverSide
            pair.server.resumeReading()
            let before = pair.client.transport.bytesWritten
            for piece in pieces { pair.client.write(piece) }
            return before
        }
        #expect(await waitUntil(pair) { serverSide.received.count == expected.count })
        #expect(serverSide.received == expected)
        // One record's overhead (TLS 1.3: 5-byte header, content type, 16-byte tag; RFC 8446 §5.2),
        // not twelve.
        let ciphertext = onLoop(pair) { pair.client.transport.bytesWritten } - before
        #expect(ciphertext > UInt64(expected.count))
        #expect(ciphertext < UInt64(expected.count + 2 * 22))
        onLoop(pair) {
            pair.client.close()
            pair.server.close()
        }
    }

    /// Heads serialized in place: before the handshake (held until it completes), gathered with
    /// plain writes in one batch (in order, still one record), and refused once closed.
    @Test func serializedWritesArriveInOrderBeforeAndAfterTheHandshake() async throws {
        let pair = try makePair()
        let serverSide = StreamRecorder()
        let early: [UInt8] = Array(repeating: 0x45, count: 30)
        #expect(onLoop(pair) { pair.client.write { $0 += early } })
        _ = await handshake(pair)
        let head: [UInt8] = Array(repeating: 0x48, count: 240), body: [UInt8] = Array(repeating: 0x62, count: 1024)
        let before = onLoop(pair) { () -> UInt64 in
            pair.server.delegate = serverSide
            pair.server.resumeReading()
            let before = pair.client.transport.bytesWritten
            pair.client.write { $0 += head }
            pair.client.write(body)
            pair.client.write { _ in }
            pair.client.write { $0 += head }
            return before
        }
        let expected = early + head + body + head
        #expect(await waitUntil(pair) { serverSide.received.count == expected.count })
        #expect(serverSide.received == expected)
        let ciphertext = onLoop(pair) { pair.client.transport.bytesWritten } - before
        #expect(ciphertext < UInt64(head.count * 2 + body.count + 2 * 22))
        let afterClose = onLoop(pair) { () -> Bool in
            pair.client.close()
            pair.server.close()
            return pair.client.write { $0 += head }
        }
        #expect(!afterClose)
    }

    @Test func pausedStreamDeliversNothingUntilResumed() async throws {
        let pair = try makePair()
        _ = await handshake(pair)
        let serverSide = StreamRecorder()
        onLoop(pair) {
            pair.server.delegate = serverSide
            pair.client.write(Array(repeating: 7, count: 100_000))
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(onLoop(pair) { serverSide.received.isEmpty })
        onLoop(pair) { pair.server.resumeReading() }
        #expect(await waitUntil(pair) { serverSide.received.count == 100_000 })
        onLoop(pair) {
            pair.client.close()
            pair.server.close()
        }
    }

    @Test func garbageInsteadOfAClientHelloFailsTheServerHandshake() async throws {
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let (a, b) = socketPair()
        let authority = Self.authority
        let engine = try TLSEngine(configuration: .server(certificateSelector: { name in
            try authority.issueLeaf(for: name ?? "localhost")
        }))
        let server = TLSStream(transport: Connection(fd: b, loop: loop, id: 2), tls: try engine.makeServerConnection())
        let garbage = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        _ = garbage.withUnsafeBytes { send(a, $0.baseAddress, $0.count, 0) }
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<Void, TLSHandshakeFailure>, Never>) in
            loop.queue.async { server.startHandshake(timeout: 5) { done.resume(returning: $0) } }
        }
        guard case .failure(.tls(let error)) = result else {
            Issue.record("expected a TLS failure, got \(result)")
            return
        }
        #expect(error.kind == .handshakeFailed)
        Glibc.close(a)
    }

    @Test func aSilentPeerTimesOut() async throws {
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let (a, b) = socketPair()
        let engine = try TLSEngine(configuration: .client())
        let client = TLSStream(transport: Connection(fd: b, loop: loop, id: 2),
                               tls: try engine.makeClientConnection(serverName: "localhost"))
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<Void, TLSHandshakeFailure>, Never>) in
            loop.queue.async { client.startHandshake(timeout: 0.2) { done.resume(returning: $0) } }
        }
        guard case .failure(.timedOut(let after)) = result else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
        #expect(after == 0.2)
        Glibc.close(a)
    }

    @Test func aVersionMismatchNamesTheProtocolVersion() async throws {
        let pair = try makePair(minimumServerVersion: .tls13, maximumClientVersion: .tls12)
        let outcome = await handshake(pair)
        guard case .failure(.tls(let error)) = outcome.client else {
            Issue.record("expected the client to fail, got \(outcome.client)")
            return
        }
        #expect("\(error)".contains("protocol version"))
    }
}
