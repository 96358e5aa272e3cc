import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// What a `Connection` reports to whoever owns it. All calls arrive on the connection's loop.
public protocol ConnectionDelegate: AnyObject {
    /// Bytes arrived. They live in the loop's shared buffer and are valid only during this call:
    /// forward them or copy what must be kept.
    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer)
    /// The peer finished sending (FIN, or TLS close_notify). Writing is still possible.
    func connectionDidReadEOF(_ connection: ByteStream)
    /// Everything queued was written after an earlier `write` returned false: send more.
    func connectionDidDrain(_ connection: ByteStream)
    /// A read or write failed (reset, broken pipe, TLS error). The stream is already closed.
    func connection(_ connection: ByteStream, didFailWith error: SocketError)
}

/// A nonblocking TCP socket on one event loop, driven by the loop's poller (see `LoopPoller`).
///
/// Writes never block: what the kernel does not take is queued, and `write` returns false once
/// the queue passes `highWaterMark`, telling the caller to stop reading from wherever the bytes
/// come from until `connectionDidDrain`. The queue is therefore bounded by the high-water mark
/// plus one read.
public final class Connection: ByteStream, @unchecked Sendable {  // all state confined to `loop.queue`
    public let fd: Int32
    public let loop: EventLoop
    /// Process-unique number, for logs and events.
    public let id: UInt64
    public let peerAddress: SocketAddress?
    public let localAddress: SocketAddress?
    /// Strong on purpose: cleared on close, which breaks the cycle.
    public var delegate: ConnectionDelegate?

    /// Bytes queued above this make `write` return false.
    public var highWaterMark = 256 * 1024
    /// Writes at least this large go to the kernel at once instead of waiting for the batch flush.
    private static let directWriteThreshold = 32 * 1024

    public private(set) var bytesRead: UInt64 = 0
    public private(set) var bytesWritten: UInt64 = 0
    public private(set) var isClosed = false
    public private(set) var didReadEOF = false
    public private(set) var isReadingPaused = true

    /// Where the loop's poller reports this socket; made on first use.
    private var registration: PollRegistration?
    /// Whether the poller's "writable" reports are wanted (bytes are waiting for room).
    private var isWaitingForRoom = false
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var flushScheduled = false
    private var owesDrainNotice = false
    private var shutdownWriteWhenFlushed = false

    /// Takes ownership of a connected nonblocking socket.
    public init(fd: Int32, loop: EventLoop, id: UInt64,
                peerAddress: SocketAddress? = nil, localAddress: SocketAddress? = nil) {
        self.fd = fd
        self.loop = loop
        self.id = id
        self.peerAddress = peerAddress ?? Socket.peerAddress(fd)
        self.localAddress = localAddress ?? Socket.localAddress(fd)
        Socket.setNoDelay(fd)
    }

    /// Bytes queued but not yet taken by the kernel.
    public var pendingByteCount: Int { pending.count - pendingOffset }

    /// Where this connection counts as open until it closes (set at most once).
    private var openCounter: OpenConnectionCounter?

    /// Counts the connection in `counter` until it closes.
    public func countOpen(in counter: OpenConnectionCounter) {
        precondition(openCounter == nil, "connection \(id) is already counted")
        guard !isClosed else { return }
        openCounter = counter
        counter.opened()
    }

    // MARK: - Reading

    /// Starts (or resumes) delivering reads to the delegate.
    public func resumeReading() {
        loop.assertOnLoop()
        guard !isClosed, !didReadEOF, isReadingPaused else { return }
        isReadingPaused = false
        if registration == nil {
            // Registering reports what is already there, like any later edge.
            register()
        } else {
            // Readiness is edge-triggered: input that arrived while paused raised its one report
            // then, and the peer may have sent everything and closed. Look for it once.
            scheduleReadAttempt()
        }
    }

    private func register() {
        registration = loop.poller.add(fd, handler: self)
        if registration == nil {
            // Only a kernel out of memory refuses; without readiness reports the socket is useless.
            loop.queue.async { [self] in
                guard !isClosed else { return }
                loop.runBatch { fail(SocketError("epoll_ctl")) }
            }
        }
    }

    /// Stops delivering reads until `resumeReading`; the kernel buffers and TCP pushes back on the peer.
    public func pauseReading() {
        loop.assertOnLoop()
        guard !isClosed, !isReadingPaused else { return }
        isReadingPaused = true
    }

    /// Reads until the kernel has nothing more (or a bound is hit). Readiness is edge-triggered,
    /// so nothing reports input left behind: a full read is followed by another, and once the
    /// peer's FIN was reported (it may have come with the data) reading goes on to the end.
    private func handleReadable() {
        readAttemptScheduled = false
        loop.runBatch {
            let buffer = loop.readBuffer
            var exhaustedBound = true
            defer {
                // Stopped by the bound, not by an empty socket: readiness is reported when it
                // changes, so nothing will report what is still there. Come back after the
                // loop's other work.
                if exhaustedBound { scheduleReadAttempt() }
            }
            for _ in 0..<Connection.readsPerEvent {
                guard !isClosed, !isReadingPaused else { exhaustedBound = false; return }
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n > 0 {
                    bytesRead += UInt64(n)
                    delegate?.connection(self, didRead: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    // A short read took everything there was; anything arriving later raises a
                    // new edge. Only an end of input already announced must still be read now
                    // (it raises no edge of its own), which saves a read that would only say
                    // EAGAIN on most events (as nginx does with EPOLLRDHUP).
                    if n < buffer.count && !peerHasClosed {
                        exhaustedBound = false
                        return
                    }
                } else if n == 0 {
                    exhaustedBound = false
                    didReadEOF = true
                    isReadingPaused = true
                    if closesGracefully && pendingByteCount == 0 {
                        close()
                        return
                    }
                    delegate?.connectionDidReadEOF(self)
                    return
                } else {
                    exhaustedBound = false
                    if errno != EAGAIN && errno != EINTR { fail(SocketError("read")) }
                    return
                }
            }
        }
    }

    /// Bounds the reads of one event so one busy peer cannot starve the loop's other connections.
    private static let readsPerEvent = 8

    private var readAttemptScheduled = false
    /// The peer's FIN (or an error) was reported: read until the end instead of stopping at a
    /// short read.
    private var peerHasClosed = false

    /// Reads once more on a later turn of the loop, if still reading then.
    private func scheduleReadAttempt() {
        guard !readAttemptScheduled else { return }
        readAttemptScheduled = true
        loop.execute { [weak self] in
            guard let self, self.readAttemptScheduled, !self.isClosed, !self.isReadingPaused else {
                self?.readAttemptScheduled = false
                return
            }
            self.handleReadable()
        }
    }

    // MARK: - Writing

    /// Queues `bytes` for the peer. Returns false when the caller should pause its source of bytes until
    /// `connectionDidDrain`.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        loop.assertOnLoop()
        guard !isClosed else { return false }
        guard bytes.count > 0 else { return pendingByteCount < highWaterMark }
        if pendingByteCount == 0 && bytes.count >= Connection.directWriteThreshold && !isWaitingForRoom {
            // Large body slices skip the queue: no copy unless the kernel refuses part of them.
            let written = writeToSocket(bytes)
            guard written >= 0 else { return false }
            if written == bytes.count { return true }
            append(UnsafeRawBufferPointer(rebasing: bytes[written...]))
            armWritable()
        } else {
            append(bytes)
            scheduleFlush()
        }
        return admitMore()
    }

    /// Serialized straight into the queue (a head is never a large slice worth writing directly).
    @discardableResult
    public func write(serializedBy serialize: (inout [UInt8]) -> Void) -> Bool {
        loop.assertOnLoop()
        guard !isClosed else { return false }
        prepareToAppend()
        let before = pending.count
        serialize(&pending)
        if pending.count == before {
            if pendingByteCount == 0 { loop.returnWriteBuffer(&pending) }  // idle connections stay small
            return pendingByteCount < highWaterMark
        }
        scheduleFlush()
        return admitMore()
    }

    /// Closes the sending side (FIN) once everything queued is written; reading continues.
    public func shutdownWrite() {
        loop.assertOnLoop()
        guard !isClosed else { return }
        if pendingByteCount == 0 {
            shutdown(fd, Int32(SHUT_WR))
        } else {
            shutdownWriteWhenFlushed = true
        }
    }

    private func admitMore() -> Bool {
        if pendingByteCount >= highWaterMark {
            owesDrainNotice = true
            return false
        }
        return true
    }

    private func append(_ bytes: UnsafeRawBufferPointer) {
        prepareToAppend()
        pending.append(contentsOf: bytes)
    }

    /// The queue emptied of what was sent, or a spare buffer of the loop's when it has none.
    private func prepareToAppend() {
        if pendingOffset > 0 && pendingOffset == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingOffset = 0
        }
        if pending.capacity == 0 { pending = loop.takeWriteBuffer() }
    }

    private func scheduleFlush() {
        if isWaitingForRoom { return }  // the poller flushes when the kernel has room
        if loop.isBatching {
            if !flushScheduled {
                flushScheduled = true
                loop.needsFlush(self)
            }
        } else {
            flushNow()
        }
    }

    /// Returns bytes written, or -1 after failing the connection.
    private func writeToSocket(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n > 0 {
                offset += n
                bytesWritten += UInt64(n)
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && errno == EAGAIN {
                break
            } else {
                failAfterWrite(SocketError("write"))
                return -1
            }
        }
        return offset
    }

    func flushNow() {
        flushScheduled = false
        guard !isClosed, pendingByteCount > 0 else { return }
        let written = pending.withUnsafeBytes { raw in
            writeToSocket(UnsafeRawBufferPointer(rebasing: raw[pendingOffset...]))
        }
        guard written >= 0 else { return }
        pendingOffset += written
        // A peer that is still taking bytes is not given up on while the rest is flushed.
        if written > 0, let linger { linger.arm() }
        if pendingByteCount > 0 {
            armWritable()
            return
        }
        // Fully drained: give the memory back, idle connections must stay small.
        loop.returnWriteBuffer(&pending)
        pendingOffset = 0
        disarmWritable()
        if linger?.abortive == true {
            resetOnceDelivered()
            return
        }
        if shutdownWriteWhenFlushed {
            shutdownWriteWhenFlushed = false
            shutdown(fd, Int32(SHUT_WR))
        }
        if closesGracefully && didReadEOF {
            close()
            return
        }
        if owesDrainNotice {
            owesDrainNotice = false
            delegate?.connectionDidDrain(self)
        }
    }

    private func armWritable() {
        guard !isWaitingForRoom, !isClosed else { return }
        isWaitingForRoom = true
        // The kernel just refused bytes, so the next "writable" edge is still to come.
        if registration == nil { register() }
    }

    private func disarmWritable() {
        isWaitingForRoom = false
    }

    // MARK: - Closing

    private func fail(_ error: SocketError) {
        let delegate = self.delegate
        close()
        delegate?.connection(self, didFailWith: error)
    }

    /// A write failed, maybe inside the owner's own `write` call: the connection closes now, and
    /// the owner hears of it on the next turn of the loop, so a failure never re-enters the code
    /// that was writing (an exchange relaying a response cannot be ended under its own feet).
    private func failAfterWrite(_ error: SocketError) {
        let report = DeferredFailure(stream: self, delegate: delegate, error: error)
        close()
        loop.execute { report.deliver() }
    }

    /// Closes the socket now, dropping anything queued. `abortive` sends RST instead of FIN.
    public func close(abortive: Bool) {
        // On the loop: closing gives the write buffer back and leaves the loop's epoll set.
        loop.assertOnLoop()
        guard !isClosed else { return }
        isClosed = true
        openCounter?.closed()
        delegate = nil
        linger?.timer.invalidate()
        // The linger held this connection: let go of it last.
        defer { linger = nil }
        loop.returnWriteBuffer(&pending)
        pendingOffset = 0
        if abortive { Socket.abortiveClose(fd) }
        if let registration {
            loop.poller.removeBeforeClosing(registration)
            self.registration = nil
        }
        Glibc.close(fd)
    }

    /// Writes what is queued, sends FIN, then closes once the peer has finished too or `linger`
    /// seconds have passed. Reading on meanwhile (and discarding) matters: closing a socket with
    /// unread input makes the kernel send RST, which can destroy the response before the client
    /// reads it (RFC 9112 §9.6).
    public func closeAfterFlush(linger: Double) {
        loop.assertOnLoop()
        guard !isClosed else { return }
        finishAlone(closingWithin: linger, abortive: false)
        if !didReadEOF { resumeReading() }
        if pendingByteCount == 0 {
            shutdown(fd, Int32(SHUT_WR))
            if didReadEOF { close() }
        } else {
            shutdownWriteWhenFlushed = true
        }
    }

    /// Writes what is queued, then sends RST instead of FIN (see `ByteStream.resetAfterFlush`).
    /// Input is no longer read: the reset discards it anyway.
    public func resetAfterFlush(linger: Double) {
        loop.assertOnLoop()
        guard !isClosed else { return }
        isReadingPaused = true
        finishAlone(closingWithin: linger, abortive: true)
        if pendingByteCount == 0 { resetOnceDelivered() }
    }

    /// The connection's user is gone and it only finishes its close: it keeps itself alive (nobody
    /// else holds it) until it closes, at the latest after `linger` seconds.
    private func finishAlone(closingWithin linger: Double, abortive: Bool) {
        delegate = nil
        self.linger?.timer.invalidate()
        let made = ConnectionLinger(connection: self, seconds: linger, abortive: abortive)
        self.linger = made
        made.arm()
    }

    /// An RST makes the kernel drop what it still holds for the peer, so the reset waits until
    /// the peer has acknowledged every byte (no readiness event says so: checked every 10 ms).
    /// A slow peer that keeps acknowledging gets everything; one that stops for the linger is reset.
    private func resetOnceDelivered() {
        guard !isClosed else { return }
        let unacknowledged = Socket.unacknowledgedByteCount(fd)
        if unacknowledged > 0 {
            if let linger, unacknowledged != linger.lastUnacknowledgedCount {
                linger.lastUnacknowledgedCount = unacknowledged
                linger.arm()
            }
            loop.execute(after: 0.01) { [self] in resetOnceDelivered() }
            return
        }
        close(abortive: true)
    }

    /// Set once the user let go and the connection only finishes its close.
    private var linger: ConnectionLinger?
    /// Let go with `closeAfterFlush`: it ends once the peer has ended too.
    private var closesGracefully: Bool { linger.map { !$0.abortive } ?? false }

    deinit {
        precondition(isClosed || registration == nil, "Connection \(id) released while open")
    }
}

extension Connection: PollHandler {
    func pollDidReport(_ mask: UInt32) {
        // Noted even while paused: the end of input must be read when reading resumes.
        if mask & .pollPeerClosed != 0 { peerHasClosed = true }
        if mask & .pollReadable != 0 && !isReadingPaused && !isClosed {
            handleReadable()
        }
        if mask & .pollWritable != 0 && isWaitingForRoom && !isClosed {
            loop.runBatch { flushNow() }
        }
    }
}
