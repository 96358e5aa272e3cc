import Dispatch
import Testing
@testable import LookoutIO
#if canImport(Glibc)
import Glibc
#endif

/// `Connection` on its loop's epoll set (edge-triggered readiness, one poll thread per loop),
/// over real socket pairs: the cases where edge-triggered readiness loses data if done wrong.
@Suite(.serialized) struct ConnectionTests {
    let group = EventLoopGroup(count: 1)
    var loop: EventLoop { group.loops[0] }

    /// (nonblocking end for a `Connection`, blocking end for the test).
    private func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    func onLoop<T>(_ body: @escaping () -> T) -> T {
        nonisolated(unsafe) var result: T?
        let loop = self.loop
        loop.queue.sync { loop.runBatch { result = body() } }
        return result!
    }

    func waitUntil(seconds: Double = 5, _ condition: @escaping () -> Bool) async -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        while DispatchTime.now().uptimeNanoseconds < deadline {
            if onLoop(condition) { return true }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        // Once more: a sleep that overslept the deadline (a busy machine) must not count.
        return onLoop(condition)
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            precondition(n > 0)
            offset += n
        }
    }

    @Test func inputThatArrivesWhilePausedIsDeliveredOnResumeWithItsEnd() async throws {
        let (fd, peer) = socketPair()
        let sink = StreamRecorder()
        let connection = onLoop { () -> Connection in
            let connection = Connection(fd: fd, loop: loop, id: 1)
            connection.delegate = sink
            connection.resumeReading()
            connection.pauseReading()
            return connection
        }
        // The one readiness edge for all of this comes while nobody is reading.
        send(peer, Array(repeating: 5, count: 200_000))
        shutdown(peer, Int32(SHUT_WR))
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(onLoop { sink.received.isEmpty })
        onLoop { connection.resumeReading() }
        #expect(await waitUntil { sink.sawEOF })
        #expect(onLoop { sink.received.count } == 200_000)
        onLoop { connection.close() }
        close(peer)
    }

    @Test func aFailedWriteIsReportedOnALaterTurnNotInsideTheWrite() async throws {
        let (fd, peer) = socketPair()
        let sink = StreamRecorder()
        let connection = onLoop { () -> Connection in
            let connection = Connection(fd: fd, loop: loop, id: 40)
            connection.delegate = sink
            return connection
        }
        close(peer)  // the next send fails with EPIPE
        let (accepted, reportedInsideWrite) = onLoop { () -> (Bool, Bool) in
            let bytes = [UInt8](repeating: 1, count: 64 * 1024)
            let accepted = bytes.withUnsafeBytes { connection.write($0) }
            return (accepted, sink.failure != nil)
        }
        #expect(!accepted)
        #expect(!reportedInsideWrite, "the owner must not hear of the failure on its own stack")
        #expect(await waitUntil { sink.failure != nil })
        #expect(onLoop { connection.isClosed })
    }

    @Test func dataAndEndOfInputReportedTogetherAreBothDelivered() async throws {
        for round in 0..<20 {
            let (fd, peer) = socketPair()
            let sink = StreamRecorder()
            let connection = onLoop { () -> Connection in
                let connection = Connection(fd: fd, loop: loop, id: UInt64(10 + round))
                connection.delegate = sink
                connection.resumeReading()
                return connection
            }
            // A short read takes the data; the FIN that came with it raises no edge of its own.
            send(peer, Array(repeating: 9, count: 100))
            shutdown(peer, Int32(SHUT_WR))
            #expect(await waitUntil(seconds: 2) { sink.sawEOF })
            #expect(onLoop { sink.received.count } == 100)
            onLoop { connection.close() }
            close(peer)
        }
    }

    /// A head serialized into the queue goes out in its place among plain writes; one that adds
    /// nothing queues nothing; a closed connection takes none.
    @Test func serializedWritesKeepTheirOrderAndAClosedConnectionTakesNone() async throws {
        let (fd, peer) = socketPair()
        let connection = onLoop { Connection(fd: fd, loop: loop, id: 3) }
        let accepted = onLoop { () -> [Bool] in
            [connection.write { _ in },
             connection.pendingByteCount == 0,
             connection.write([1, 2]),
             connection.write { $0 += [3, 4, 5] },
             connection.write { _ in },
             connection.write { $0.append(6) }]
        }
        #expect(accepted == [true, true, true, true, true, true])
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16)
        while received.count < 6 {
            let n = buffer.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        #expect(received == [1, 2, 3, 4, 5, 6])
        #expect(await waitUntil { connection.pendingByteCount == 0 })
        let afterClose = onLoop { () -> Bool in
            connection.close()
            return connection.write { $0.append(7) }
        }
        #expect(!afterClose)
        close(peer)
    }

    @Test func aBackedUpWriteDrainsWhenThePeerCatchesUp() async throws {
        let (fd, peer) = socketPair()
        let sink = StreamRecorder()
        let payload = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ ($0 >> 16)) }
        let connection = onLoop { () -> Connection in
            let connection = Connection(fd: fd, loop: loop, id: 2)
            connection.delegate = sink
            return connection
        }
        let accepted = onLoop { connection.write(payload) }
        #expect(!accepted, "4 MiB cannot fit a socket pair: write must report backpressure")
        // Read it all, slowly at first: room appears in many small steps.
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.count < payload.count {
            let n = buffer.withUnsafeMutableBytes { recv(peer, $0.baseAddress, received.count < 1 << 20 ? 4096 : $0.count, 0) }
            #expect(n > 0)
            if n <= 0 { break }
            received.append(contentsOf: buffer[0..<n])
        }
        #expect(received == payload)
        #expect(await waitUntil { sink.drains == 1 })
        onLoop { connection.close() }
        close(peer)
    }

    @Test func aConnectionClosedAndReleasedByAnotherInTheSameWakeUpHearsNothing() async throws {
        // Both sockets become ready before the loop wakes; whichever is handled first closes and
        // releases the other, whose report from the same epoll batch must then be dropped.
        final class Holder: @unchecked Sendable {  // touched only on the loop's queue
            var connections: [Int: Connection] = [:]
            var readsAfterClose = 0
        }
        for round in 0..<20 {
            let holder = Holder()
            let pairs = [socketPair(), socketPair()]
            let sinks = [StreamRecorder(), StreamRecorder()]
            // Input first: registering then reports both sockets in the loop's first epoll batch.
            send(pairs[0].1, [1])
            send(pairs[1].1, [2])
            onLoop {
                for index in 0..<2 {
                    let connection = Connection(fd: pairs[index].0, loop: loop, id: UInt64(100 + round * 2 + index))
                    connection.delegate = sinks[index]
                    holder.connections[index] = connection
                    sinks[index].onRead = { _ in
                        let other = 1 - index
                        if let victim = holder.connections.removeValue(forKey: other) {
                            victim.close()
                        } else if holder.connections[index] == nil {
                            holder.readsAfterClose += 1
                        }
                    }
                }
                holder.connections.values.forEach { $0.resumeReading() }
            }
            #expect(await waitUntil { holder.connections.count == 1 })
            try await Task.sleep(nanoseconds: 20_000_000)
            #expect(onLoop { holder.readsAfterClose } == 0)
            onLoop { holder.connections.values.forEach { $0.close() } }
            pairs.forEach { close($0.1) }
        }
        // In some rounds the victim's report came second in the batch and had to be dropped.
        #expect(onLoop { loop.poller.staleReportCount } > 0)
    }
}

/// The loop's poll thread: it runs readiness on the loop's queue, runs work sent for the batch's
/// end before the next turn, defers other work sent from there to its next turn, and ends (closing
/// its descriptors) when its loop goes.
@Suite struct PollThreadTests {
    @Test func workSentFromAReadHandlerRunsOnTheQueueAfterTheBatch() async throws {
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let recorder = OrderRecorder(loop: loop, peer: fds[1])
        let connection = Connection(fd: fds[0], loop: loop, id: 1)
        loop.queue.sync {
            connection.delegate = recorder
            recorder.writer = connection
            connection.resumeReading()
        }
        var byte: UInt8 = 7
        #expect(Glibc.send(fds[1], &byte, 1, Int32(MSG_NOSIGNAL)) == 1)
        let deadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while loop.queue.sync(execute: { recorder.order.count < 5 }) && DispatchTime.now().uptimeNanoseconds < deadline {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        let order = loop.queue.sync { recorder.order }
        // Batch-end work runs after the read, before the batch's writes are flushed; work it
        // sends for the batch's end runs in the same batch, still before the next turn.
        #expect(order == ["read", "after execute", "batch end", "batch end again", "next turn"])
        // The batch-end work's write left in that batch: the peer has it before the next turn.
        #expect(loop.queue.sync { recorder.peerHadBatchEndWriteAtNextTurn })
        #expect(loop.queue.sync { recorder.sentSoFar }, "sendGatheredSoFar did not send the batch's write")
        #expect(loop.queue.sync { recorder.ranOnQueue })
        loop.queue.sync { connection.close() }
        close(fds[1])
    }

    @Test func batchEndWorkThatKeepsSchedulingMoreWaitsForTheNextTurnAfterFourRounds() async throws {
        let group = EventLoopGroup(count: 1)
        let loop = group.loops[0]
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let recorder = ChainRecorder(loop: loop, links: 6)
        let connection = Connection(fd: fds[0], loop: loop, id: 1)
        loop.queue.sync {
            connection.delegate = recorder
            connection.resumeReading()
        }
        var byte: UInt8 = 7
        #expect(Glibc.send(fds[1], &byte, 1, Int32(MSG_NOSIGNAL)) == 1)
        let deadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while loop.queue.sync(execute: { recorder.order.count < 8 }) && DispatchTime.now().uptimeNanoseconds < deadline {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        // Four rounds run in the read's batch; the rest waits behind work already sent to the
        // next turn, so a session that keeps finding output cannot hold the loop in one batch.
        #expect(loop.queue.sync { recorder.order } == ["read", "link 1", "link 2", "link 3", "link 4", "next turn", "link 5", "link 6"])
        loop.queue.sync { connection.close() }
        close(fds[1])
    }

    @Test func aReleasedLoopEndsItsPollThread() async throws {
        var group: EventLoopGroup? = EventLoopGroup(count: 1)
        let deadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        var tid: Int32 = 0
        while tid == 0 && DispatchTime.now().uptimeNanoseconds < deadline {
            tid = group!.loops[0].pollThreadKernelID.load(ordering: .relaxed)
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        // Read once more: a sleep that overslept the deadline (a busy machine) must not count.
        tid = group!.loops[0].pollThreadKernelID.load(ordering: .relaxed)
        #expect(tid != 0)
        #expect(access("/proc/self/task/\(tid)", F_OK) == 0)
        group = nil
        // A deadline of its own: the wait for the thread to start may have used most of the first.
        let exitDeadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while access("/proc/self/task/\(tid)", F_OK) == 0 && DispatchTime.now().uptimeNanoseconds < exitDeadline {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        #expect(access("/proc/self/task/\(tid)", F_OK) != 0, "the poll thread outlived its loop")
    }
}

/// Records, on the loop, the order of a read, work sent from inside it, and the rest of its batch.
private final class OrderRecorder: ConnectionDelegate, @unchecked Sendable {  // confined to `loop.queue`
    let loop: EventLoop
    let peer: Int32
    var order: [String] = []
    var ranOnQueue = false
    var peerHadBatchEndWriteAtNextTurn = false
    var sentSoFar = false
    var writer: Connection?

    init(loop: EventLoop, peer: Int32) {
        self.loop = loop
        self.peer = peer
    }

    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        order.append("read")
        // A write made in a batch waits for its end, unless the batch sends what it has so far.
        _ = writer?.write([5])
        var byte: UInt8 = 0
        let heldInBatch = recv(peer, &byte, 1, Int32(MSG_DONTWAIT)) == -1
        loop.sendGatheredSoFar()
        sentSoFar = heldInBatch && recv(peer, &byte, 1, Int32(MSG_DONTWAIT)) == 1 && byte == 5
        loop.execute { [self] in
            dispatchPrecondition(condition: .onQueue(loop.queue))
            ranOnQueue = true
            order.append("next turn")
            var byte: UInt8 = 0
            peerHadBatchEndWriteAtNextTurn = recv(peer, &byte, 1, Int32(MSG_DONTWAIT)) == 1 && byte == 9
        }
        loop.executeAtBatchEnd { [self] in
            order.append("batch end")
            _ = writer?.write([9])
            loop.executeAtBatchEnd { [self] in order.append("batch end again") }
        }
        order.append("after execute")
    }

    func connectionDidReadEOF(_ connection: ByteStream) {}
    func connectionDidDrain(_ connection: ByteStream) {}
    func connection(_ connection: ByteStream, didFailWith error: SocketError) {}
}

/// On a read, sends a next-turn marker and a chain of batch-end work, each link scheduling the next.
private final class ChainRecorder: ConnectionDelegate, @unchecked Sendable {  // confined to `loop.queue`
    let loop: EventLoop
    let links: Int
    var order: [String] = []

    init(loop: EventLoop, links: Int) {
        self.loop = loop
        self.links = links
    }

    private func link(_ number: Int) {
        order.append("link \(number)")
        if number < links { loop.executeAtBatchEnd { [self] in link(number + 1) } }
    }

    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        order.append("read")
        loop.execute { [self] in order.append("next turn") }
        loop.executeAtBatchEnd { [self] in link(1) }
    }

    func connectionDidReadEOF(_ connection: ByteStream) {}
    func connectionDidDrain(_ connection: ByteStream) {}
    func connection(_ connection: ByteStream, didFailWith error: SocketError) {}
}

/// Address ranges for `access` (clients, deny_networks).
@Suite struct IPNetworkTests {
    private func address(_ ip: String) -> SocketAddress { SocketAddress(ip: ip, port: 80)! }

    @Test func rangesMatchByPrefixInEitherAddressFamily() {
        let ten = IPNetwork(cidr: "10.0.0.0/8")!
        #expect(ten.contains(address("10.255.0.1")) && !ten.contains(address("11.0.0.1")))
        // An IPv4-mapped IPv6 address is the same address (RFC 4291 §2.5.5.2).
        #expect(ten.contains(address("::ffff:10.1.2.3")))
        let v6 = IPNetwork(cidr: "fd00::/8")!
        #expect(v6.contains(address("fd12::1")) && !v6.contains(address("fe80::1")))
        #expect(IPNetwork(cidr: "192.0.2.7")!.contains(address("192.0.2.7")))
        #expect(!IPNetwork(cidr: "192.0.2.7")!.contains(address("192.0.2.8")))
        #expect(IPNetwork(cidr: "0.0.0.0/0")!.contains(address("203.0.113.9")))
        #expect(IPNetwork(cidr: "::/0")!.contains(address("2001:db8::1")))
    }

    @Test func badRangesAreRefused() {
        for text in ["10.0.0.1/8", "10.0.0.0/33", "::1/129", "10.0.0.0/", "0x7f000001", "2130706433", "host", "10.0.0.0/+8"] {
            #expect(IPNetwork(cidr: text) == nil, "\(text)")
        }
    }

    @Test func namedSetsCoverTheSpellingsOfThisHost() {
        let loopback = IPNetwork.named("loopback")!
        for ip in ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::"] {
            #expect(loopback.contains { $0.contains(address(ip)) }, "\(ip)")
        }
        #expect(!loopback.contains { $0.contains(address("192.0.2.1")) })
        let privateRanges = IPNetwork.named("private")!
        #expect(privateRanges.contains { $0.contains(address("172.31.255.255")) })
        #expect(!privateRanges.contains { $0.contains(address("172.32.0.0")) })
        #expect(IPNetwork.named("link-local")!.contains { $0.contains(address("169.254.169.254")) })
        #expect(IPNetwork.named("multicast")!.contains { $0.contains(address("ff02::1")) })
        #expect(IPNetwork.named("intranet") == nil)
    }
}
