import Dispatch
import Testing
@testable import LookoutIO
#if canImport(Glibc)
import Glibc
#endif

/// A connection its user let go of (`closeAfterFlush`, `resetAfterFlush`): it keeps itself alive
/// while its queued bytes go out, ends as asked, and is released once closed; a peer that stops
/// making progress is given up on after the linger, never before.
extension ConnectionTests {
    /// What the test reads on the loop: the connection, held weakly (only its linger holds it).
    final class LingerWatch: @unchecked Sendable {  // touched on the test loop's queue only
        weak var connection: Connection?
    }

    /// A connected TCP pair on 127.0.0.1: (nonblocking end for a `Connection`, blocking end for
    /// the test). TCP, not a socket pair: the reset and the unacknowledged count are TCP's.
    private func tcpPair() -> (Int32, Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                precondition(bind(listener, $0, length) == 0)
                precondition(listen(listener, 1) == 0)
                precondition(getsockname(listener, $0, &length) == 0)
            }
        }
        let peer = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { precondition(connect(peer, $0, length) == 0) }
        }
        let fd = accept(listener, nil, nil)
        precondition(fd >= 0)
        close(listener)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return (fd, peer)
    }

    /// Reads until the end or an error: the bytes, and the errno that ended it (0 for a FIN).
    private func readToEnd(_ fd: Int32) -> (bytes: [UInt8], error: Int32) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received.append(contentsOf: buffer[0..<n])
            } else {
                return (received, n == 0 ? 0 : errno)
            }
        }
    }

    private func payload(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 12)) }
    }

    @Test func closeAfterFlushDeliversEverythingThenEndsWhenThePeerDoes() async throws {
        let (fd, peer) = tcpPair()
        let bytes = payload(8 << 20)  // more than the socket buffers hold: most is still queued
        let watch = LingerWatch()
        onLoop {
            let connection = Connection(fd: fd, loop: loop, id: 1)
            watch.connection = connection
            _ = connection.write(bytes)
            connection.closeAfterFlush(linger: 30)
        }
        #expect(onLoop { watch.connection != nil }, "the linger keeps the connection its user let go of")
        let (received, error) = readToEnd(peer)
        #expect(received == bytes)
        #expect(error == 0, "a FIN after the last byte, not a reset")
        close(peer)
        #expect(await waitUntil(seconds: 10) { watch.connection == nil }, "closed and released when the peer ended")
    }

    @Test func aPeerThatNeverEndsIsLetGoAfterTheLingerAndNotBefore() async throws {
        let (fd, peer) = tcpPair()
        let linger = 0.3
        let watch = LingerWatch()
        let start = DispatchTime.now().uptimeNanoseconds
        onLoop {
            let connection = Connection(fd: fd, loop: loop, id: 2)
            watch.connection = connection
            _ = connection.write([1, 2, 3])
            connection.closeAfterFlush(linger: linger)
        }
        #expect(await waitUntil(seconds: 10) { watch.connection == nil })
        let released = DispatchTime.now().uptimeNanoseconds
        #expect(released >= start + UInt64(linger * 1e9), "given up on before its linger")
        let (received, _) = readToEnd(peer)
        #expect(received == [1, 2, 3])
        close(peer)
    }

    @Test func resetAfterFlushDeliversEverythingBeforeTheReset() async throws {
        let (fd, peer) = tcpPair()
        let bytes = payload(8 << 20)
        let watch = LingerWatch()
        onLoop {
            let connection = Connection(fd: fd, loop: loop, id: 3)
            watch.connection = connection
            _ = connection.write(bytes)
            connection.resetAfterFlush(linger: 30)
        }
        let (received, error) = readToEnd(peer)
        #expect(received == bytes, "the reset waits for every byte to be acknowledged")
        #expect(error == ECONNRESET, "the end is a reset, not a FIN")
        close(peer)
        #expect(await waitUntil(seconds: 10) { watch.connection == nil })
    }
}
