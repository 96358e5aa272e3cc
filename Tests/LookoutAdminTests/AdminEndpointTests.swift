import Dispatch
import HTTPTypes
import LookoutIO
import LookoutModel
import Synchronization
import Testing
@testable import LookoutAdmin
#if canImport(Glibc)
import Glibc
#endif

/// The admin endpoint's extension points: what a page is asked, and the bounded sink a streamed
/// answer writes to, over a real socket pair on a real loop.
@Suite(.serialized) struct AdminEndpointTests {
    @Test func aRequestsParametersArePercentDecodedAndTheLastOneWins() {
        let request = AdminRequest(method: .get, path: "/exchanges", query: "filter=host%3Aa.example%20status%3A5xx&limit=5&limit=7",
                                   headerFields: [:], statistics: SessionStatistics())
        #expect(request.parameters["filter"] == "host:a.example status:5xx")
        #expect(request.parameters["limit"] == "7")
        #expect(request.exchanges == nil, "no session to ask unless the core gives one")
    }

    /// Records what reached the test's end of the socket pair.
    private func read(_ fd: Int32, atLeast count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while received.count < count && DispatchTime.now().uptimeNanoseconds < deadline {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return received
    }

    @Test func aStreamedAnswerIsBoundedAndEndsWhenFinished() async throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let connection = loop.queue.sync { Connection(fd: fds[0], loop: loop, id: 1) }
        let sink = AdminStreamSink(connection: connection, byteLimit: 1000)
        let finished = Mutex(false)
        loop.queue.sync { sink.onFinished = { finished.withLock { $0 = true } } }
        // On the loop's queue, so the first bytes cannot reach the connection in between.
        let (first, second) = loop.queue.sync {
            (sink.send(Array(repeating: UInt8(ascii: "a"), count: 600)),
             sink.send(Array(repeating: UInt8(ascii: "b"), count: 600)))
        }
        #expect(first)
        #expect(!second, "600 more would pass the 1000-byte bound: refused, nothing queued")
        sink.finish()
        #expect(!sink.send([1]), "nothing after finish")
        let received = read(fds[1], atLeast: 600)
        #expect(received.count == 600 && received.allSatisfy { $0 == UInt8(ascii: "a") })
        for _ in 0..<500 where !finished.withLock({ $0 }) { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(finished.withLock { $0 }, "the connection was told the answer ended")
        loop.queue.sync { connection.close() }
        close(fds[1])
    }

    @Test func nothingIsQueuedPastTheLimitForAClientThatDoesNotRead() async throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        let connection = loop.queue.sync { Connection(fd: fds[0], loop: loop, id: 2) }
        let sink = AdminStreamSink(connection: connection, byteLimit: 64 * 1024)
        // The peer reads nothing: the socket and the connection fill, then the sink's own bound.
        var accepted = 0
        for _ in 0..<10_000 {
            if sink.send(Array(repeating: 7, count: 8192)) { accepted += 1 } else { break }
            if accepted % 16 == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        }
        #expect(accepted < 10_000, "the sink refused once the client fell behind")
        loop.queue.sync { sink.clientWentAway() }
        #expect(!sink.send([1]))
        #expect(sink.hasEnded)
        loop.queue.sync { connection.close() }
        close(fds[1])
    }
}
