import Dispatch
import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import Synchronization
import Testing
@testable import LookoutUpstream
#if canImport(Glibc)
import Glibc
#endif

/// An upstream task run on its own, with no session: the values it is given and a delegate that
/// records what it reports. What the upstream target needs of the rest of Lookout is exactly this.
@Suite(.serialized) struct UpstreamTaskTests {
    /// Records every report, in order (on the task's loop; read after `done`).
    final class Recorder: UpstreamTaskDelegate, UpstreamEvents, @unchecked Sendable {  // written on the task's loop, read after `done`
        let notes = Mutex<[String]>([])
        private let done = Mutex(false)
        var body: [UInt8] = []
        var completion: (error: ProxyError?, metrics: TransactionMetrics)?

        private func note(_ text: String) { notes.withLock { $0.append(text) } }

        /// Waits (without holding a thread) until the task completed, at most 10 s.
        func waitForCompletion() async throws {
            for _ in 0..<1000 where !done.withLock({ $0 }) {
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            #expect(done.withLock { $0 }, "the task completed")
        }

        func emit<Kind: EventKind>(_ context: @autoclosure () -> EventContext, _ make: @autoclosure () -> Kind) {
            note("emit \(Kind.name)")
        }
        func upstream(_ context: @autoclosure () -> EventContext, didResolve resolution: Resolution, host: String,
                      milliseconds: Double) { note("resolve \(host)") }
        func upstream(_ context: @autoclosure () -> EventContext, didConnect connection: ByteStream, milliseconds: Double) {
            note("connect")
        }
        func upstream(_ context: @autoclosure () -> EventContext, didReuse connection: ByteStream) { note("reuse") }
        func task(_ task: UpstreamTask, didReceiveChallengeFor host: String, rule: String, evaluator: String) {}
        func task(_ task: UpstreamTask, didEvaluateServerTrust decision: TrustDecision) {}
        func taskIsReadyForBody(_ task: UpstreamTask) {
            note("ready for body")
            task.finishBody(trailers: nil)
        }
        func task(_ task: UpstreamTask, didSendBodyData bytes: Int) {}
        func taskDidDrainRequestBody(_ task: UpstreamTask) {}
        func task(_ task: UpstreamTask, didReceiveInformational head: ResponseHead) {}
        func task(_ task: UpstreamTask, didReceiveResponse head: consuming ResponseHead) -> ResponseDisposition {
            note("response \(head.status)")
            return .allow
        }
        func task(_ task: UpstreamTask, didReceiveData bytes: UnsafeRawBufferPointer, total: UInt64) -> Bool {
            body += bytes
            return true
        }
        func task(_ task: UpstreamTask, didFinishResponseWith trailers: HTTPFields?) { note("finished") }
        func taskDidSuspend(_ task: UpstreamTask) {}
        func taskDidResume(_ task: UpstreamTask) {}
        func task(_ task: UpstreamTask, didCompleteWith error: ProxyError?, metrics: consuming TransactionMetrics,
                  notifyExchange: Bool) {
            note("complete")
            completion = (error, metrics)
            done.withLock { $0 = true }
        }
    }

    private func environment() throws -> UpstreamEnvironment {
        let tls = try TLSEngine(configuration: .client(applicationProtocols: ["http/1.1"]))
        let trust = try ServerTrustManager(
            rules: [], defaultRule: TrustRule(hosts: [], evaluator: DefaultTrustEvaluator(trustStore: TrustStore())))
        var timeouts = Timeouts()
        timeouts.upstreamConnect = 2
        timeouts.upstreamFirstByte = 2
        return UpstreamEnvironment(timeouts: timeouts, parserLimits: HTTPParserLimits(), http2: HTTP2Settings(),
                                   poolIdleTimeout: 30, tls: tls, tlsHTTP1: tls, trustManager: trust,
                                   resolver: Resolver(cacheTTL: 0), access: AccessPolicy(),
                                   failFastWhenUnreachable: false, openConnections: OpenConnectionCounter(),
                                   networkUnreachable: { false }, shuttingDown: { false })
    }

    /// A loopback origin that answers one request with `response` and closes.
    private func origin(answering response: String) -> (port: Int, stop: () -> Void) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                _ = bind(fd, sa, length)
                _ = getsockname(fd, sa, &length)
            }
        }
        listen(fd, 4)
        let bytes = Array(response.utf8)
        DispatchQueue.global().async {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = read(client, &buffer, buffer.count)
            _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(client)
        }
        return (Int(UInt16(bigEndian: address.sin_port)), { shutdown(fd, Int32(SHUT_RDWR)); close(fd) })
    }

    /// Trust changed: connections opened before are not pooled again, those opened after are.
    @Test func aRetiringPoolKeepsNoConnectionOpenedBeforeAndTakesNewOnes() async throws {
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let pool = UpstreamConnectionPool(loop: loop, maxIdlePerOrigin: 4, idleTimeout: 30)
        let origin = Origin(host: "127.0.0.1", port: 1)
        let outcome: [Bool] = await withCheckedContinuation { done in
            loop.execute {
                // Each one a socket of a pair whose other end stays open (the origin's side).
                var peers: [Int32] = []
                defer { peers.forEach { close($0) } }
                func opened(_ id: UInt64) -> UpstreamConnection {
                    var pair: [Int32] = [0, 0]
                    _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair)
                    peers.append(pair[1])
                    return UpstreamConnection(connection: Connection(fd: pair[0], loop: loop, id: id), origin: origin)
                }
                let idle = opened(1), busy = opened(2)
                pool.release(idle)
                pool.retireOpened()
                let idleDropped = pool.take(origin) == nil && idle.connection.isClosed
                pool.release(busy)
                let busyClosed = pool.take(origin) == nil && busy.connection.isClosed
                let fresh = opened(3)
                pool.release(fresh)
                let freshKept = pool.take(origin) === fresh
                fresh.connection.close()
                done.resume(returning: [idleDropped, busyClosed, freshKept])
            }
        }
        #expect(outcome == [true, true, true])
        // The closed connections finish closing (their peers are gone) before the loop goes: a
        // lingering close's timer reads its loop.
        try await Task.sleep(nanoseconds: 200_000_000)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in loop.execute { done.resume() } }
        withExtendedLifetime(group) {}
    }

    @Test func aTaskFetchesAResponseWithNoSessionAround() async throws {
        let (port, stop) = origin(answering: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        defer { stop() }
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let pool = UpstreamConnectionPool(loop: loop, maxIdlePerOrigin: 4, idleTimeout: 30)
        let recorder = Recorder()
        let originValue = Origin(host: "127.0.0.1", port: port)
        let request = UpstreamRequest(origin: originValue, method: .get, url: "http://127.0.0.1:\(port)/x", target: "/x",
                                      fields: [.host: "127.0.0.1:\(port)"], bodyIsChunked: false, hasBody: false,
                                      asksForUpgrade: false, acceptsTrailers: false)
        let task = UpstreamTask(id: 1, attempt: 1, request: request, requestID: 1, connectionID: 1,
                                environment: try environment(), pool: pool, events: recorder, delegate: recorder)
        loop.execute { task.start() }
        try await recorder.waitForCompletion()
        let notes = recorder.notes.withLock { $0 }
        #expect(notes == ["resolve 127.0.0.1", "connect", "ready for body", "response 200", "finished", "complete"])
        #expect(String(decoding: recorder.body, as: UTF8.self) == "hello")
        #expect(recorder.completion?.error == nil)
        #expect(recorder.completion?.metrics.responseBodyBytes == 5)
        #expect(recorder.completion?.metrics.isReusedConnection == false)
    }

    @Test func aRefusedDestinationFailsBeforeAnyPacket() async throws {
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let pool = UpstreamConnectionPool(loop: loop, maxIdlePerOrigin: 4, idleTimeout: 30)
        let recorder = Recorder()
        var access = AccessPolicy()
        access.denyHosts = HostRuleSet([([try HostPattern("blocked.example")], "blocked.example")])
        let base = try environment()
        let environment = UpstreamEnvironment(
            timeouts: base.timeouts, parserLimits: base.parserLimits, http2: base.http2, poolIdleTimeout: 30,
            tls: base.tls, tlsHTTP1: base.tlsHTTP1, trustManager: base.trustManager, resolver: base.resolver,
            access: access, failFastWhenUnreachable: false, openConnections: base.openConnections,
            networkUnreachable: { false }, shuttingDown: { false })
        let request = UpstreamRequest(origin: Origin(host: "blocked.example", port: 80), method: .get,
                                      url: "http://blocked.example/", target: "/", fields: [:], bodyIsChunked: false,
                                      hasBody: false, asksForUpgrade: false, acceptsTrailers: false)
        let task = UpstreamTask(id: 2, attempt: 1, request: request, requestID: 2, connectionID: 1,
                                environment: environment, pool: pool, events: recorder, delegate: recorder)
        loop.execute { task.start() }
        try await recorder.waitForCompletion()
        #expect(recorder.completion?.error?.code == "destination_denied")
        #expect(recorder.notes.withLock { $0 } == ["complete"], "no resolve, no connect")
    }
}
