import LookoutIO
import LookoutSync

/// The body of an admin answer that is produced over time (a Server-Sent Events stream). The
/// core writes the head, then calls `start` with the sink to write to; the body lasts until the
/// client leaves or the session shuts down.
public protocol AdminStreamProducer: AnyObject, Sendable {
    /// Called once, on the connection's loop, after the head was written.
    func start(_ sink: AdminStreamSink)
    /// The client went away or the session is shutting down: stop producing (any thread may
    /// still be inside `send`; later sends return false).
    func stop()
}

/// Where a producer writes a streamed admin body, from any thread. Bounded: bytes wait here only
/// while the client's connection is above its high-water mark, and at most `byteLimit` of them;
/// beyond that `send` refuses, and the producer decides (a live stream drops and counts, and
/// learns from `whenDrained` when the client has caught up). The connection itself is touched
/// only on its loop.
public final class AdminStreamSink: @unchecked Sendable {  // `state` under its lock; `connection`, `onFinished` on `loop` only
    private struct State {
        var chunks: [[UInt8]] = []
        var bytes = 0
        var flushScheduled = false
        /// The connection took more than its high-water mark: wait for its drain notice.
        var connectionFull = false
        var ended = false
        /// The producer has sent everything: end the answer once the queue is handed over.
        var finishing = false
        var drainWaiters: [@Sendable () -> Void] = []
    }

    /// Called on the loop once a finished stream's bytes are all with the connection (set by the
    /// connection that owns the sink).
    public var onFinished: (() -> Void)?

    private let state = Guarded(State())
    private let connection: ByteStream
    private let loop: EventLoop
    /// At most this many bytes wait here for a slow client.
    public let byteLimit: Int
    /// 1 MiB: a few thousand records.
    public static let defaultByteLimit = 1 << 20

    public init(connection: ByteStream, byteLimit: Int) {
        self.connection = connection
        self.loop = connection.loop
        self.byteLimit = byteLimit
    }

    /// Queues `bytes` for the client. False when they would not fit (the client reads too
    /// slowly) or the stream has ended: nothing was queued.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        let outcome: Bool? = state.withLock { state in
            guard !state.ended, !state.finishing, state.bytes + bytes.count <= byteLimit else { return nil }
            state.chunks.append(bytes)
            state.bytes += bytes.count
            if state.flushScheduled || state.connectionFull { return false }
            state.flushScheduled = true
            return true
        }
        guard let scheduleFlush = outcome else { return false }
        if scheduleFlush { loop.execute { [self] in flush() } }
        return true
    }

    /// The body is complete (a file sent whole): once what is queued has gone to the connection,
    /// the answer ends and the connection closes after delivering it. Later sends are refused.
    public func finish() {
        let scheduleFlush: Bool = state.withLock { state in
            guard !state.ended, !state.finishing else { return false }
            state.finishing = true
            if state.flushScheduled || state.connectionFull { return false }
            state.flushScheduled = true
            return true
        }
        if scheduleFlush { loop.execute { [self] in flush() } }
    }

    /// Runs `action` (on the loop) once everything queued so far has gone to the connection and
    /// it has room again; at once when that is already so.
    public func whenDrained(_ action: @escaping @Sendable () -> Void) {
        let now: Bool = state.withLock { state in
            if state.chunks.isEmpty && !state.connectionFull { return true }
            state.drainWaiters.append(action)
            return false
        }
        if now { loop.execute(action) }
    }

    /// True once the client went away (or the session closed the stream).
    public var hasEnded: Bool { state.withLock { $0.ended } }

    // MARK: - On the loop

    private func flush() {
        let (chunks, finished): ([[UInt8]], Bool) = state.withLock { state in
            state.flushScheduled = false
            guard !state.connectionFull else { return ([], false) }
            let chunks = state.chunks
            state.chunks = []
            state.bytes = 0
            // A finished body's last bytes are all taken here: nothing can be sent after them.
            let finished = state.finishing && !state.ended
            if finished { state.ended = true }
            return (chunks, finished)
        }
        guard !connection.isClosed else { return }
        // One write (one system call) for everything that queued up since the last flush: a busy
        // live stream gathers many small frames between two turns of the loop.
        var full = false
        if chunks.count > 1 {
            var joined: [UInt8] = []
            joined.reserveCapacity(chunks.reduce(0) { $0 + $1.count })
            for chunk in chunks { joined += chunk }
            full = !connection.write(joined)
        } else if let chunk = chunks.first {
            full = !connection.write(chunk)
        }
        if full {
            state.withLock { $0.connectionFull = true }
        } else {
            runDrainWaiters()
        }
        // The connection delivers what it holds before it closes.
        if finished { onFinished?() }
    }

    /// The connection went below its high-water mark.
    public func connectionDidDrain() {
        state.withLock { $0.connectionFull = false }
        flush()
    }

    /// The client closed or failed: nothing more is sent.
    public func clientWentAway() {
        onFinished = nil
        state.withLock { state in
            state.ended = true
            state.chunks = []
            state.bytes = 0
            state.drainWaiters = []
        }
    }

    private func runDrainWaiters() {
        let waiters: [@Sendable () -> Void] = state.withLock { state in
            guard state.chunks.isEmpty, !state.connectionFull else { return [] }
            let waiters = state.drainWaiters
            state.drainWaiters = []
            return waiters
        }
        waiters.forEach { $0() }
    }
}
