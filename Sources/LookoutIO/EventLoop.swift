import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// One serial Dispatch queue that owns a set of connections, plus the scratch memory they share.
///
/// Everything a connection does happens on its loop's queue, so connection state needs no locks.
/// Reads land in one shared buffer per loop (not one per connection) and are handed on at once,
/// which keeps idle connections small; writes are gathered during a read event and flushed once at
/// its end, so a response head and its body usually leave in one system call.
public final class EventLoop: @unchecked Sendable {  // mutable state confined to `queue`
    /// The serial queue every connection of this loop runs on.
    public let queue: DispatchQueue
    /// A number for logs and tests.
    public let index: Int
    /// Scratch space for reads; valid only during one read callback.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Connections that wrote during the current event and must flush before it ends.
    private var connectionsToFlush: [Connection] = []

    init(index: Int, readBufferSize: Int) {
        self.index = index
        self.queue = DispatchQueue(label: "lookout.loop.\(index)")
        self.readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readBufferSize, alignment: 16)
    }

    deinit { readBuffer.deallocate() }

    /// True while an event is being handled; writes made then are flushed together at its end.
    private var inBatch = false

    /// Runs `work` on this loop as one batch (writes it makes are flushed when it returns).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        queue.async { [self] in runBatch(work) }
    }

    /// Runs `work` on this loop after `seconds`, as one batch.
    public func execute(after seconds: Double, _ work: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + seconds) { [self] in runBatch(work) }
    }

    /// Runs `body` with write batching: connections that write during it flush once, at its end.
    /// Nested calls join the outer batch.
    public func runBatch(_ body: () -> Void) {
        assertOnLoop()
        if inBatch { body(); return }
        inBatch = true
        body()
        flushPending()
        inBatch = false
    }

    /// Whether writes should be deferred to the end of the current batch.
    var isBatching: Bool { inBatch }

    /// Traps in debug builds when called off this loop.
    @inline(__always) public func assertOnLoop() {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
        #endif
    }

    // MARK: - Write batching

    func needsFlush(_ connection: Connection) {
        connectionsToFlush.append(connection)
    }

    /// Flushes every connection that wrote during this event; called when an event handler returns.
    func flushPending() {
        var index = 0
        while index < connectionsToFlush.count {
            connectionsToFlush[index].flushNow()
            index += 1
        }
        connectionsToFlush.removeAll(keepingCapacity: true)
    }
}

/// A fixed set of event loops; connections are spread over them round-robin.
public final class EventLoopGroup: @unchecked Sendable {  // `nextIndex` is only used from the accept queue
    public let loops: [EventLoop]
    private var nextIndex = 0

    /// `count` 0 means one loop per core.
    public init(count: Int, readBufferSize: Int = 128 * 1024) {
        let n = count > 0 ? count : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        loops = (0..<n).map { EventLoop(index: $0, readBufferSize: readBufferSize) }
    }

    /// The next loop in round-robin order. Not thread-safe: call from one queue.
    public func next() -> EventLoop {
        let loop = loops[nextIndex]
        nextIndex = (nextIndex + 1) % loops.count
        return loop
    }
}
