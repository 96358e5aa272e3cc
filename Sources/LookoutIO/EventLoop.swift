import Dispatch
import Synchronization
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
    /// Scratch space for ciphertext on its way from OpenSSL to a socket (see `TLSStream`).
    let ciphertextBuffer: UnsafeMutableRawBufferPointer
    /// The readiness of every socket on this loop (one epoll set and its poll thread for all of them).
    let poller = LoopPoller()
    /// Empty write buffers with capacity, lent to connections while they have bytes queued: a
    /// connection gives its buffer back once drained (idle connections stay small), and the next
    /// writer takes it instead of allocating one per response. Large ones are kept too: a body
    /// relay that queues a few hundred KiB per read would otherwise map and unmap fresh pages
    /// (page faults showed up as 5 % of the proxy's time on 1 MiB responses).
    private var spareWriteBuffers: [[UInt8]] = []
    private var spareWriteBufferBytes = 0
    private static let spareWriteBufferLimit = 64
    private static let spareWriteBufferByteLimit = 4 << 20

    func takeWriteBuffer() -> [UInt8] {
        guard let buffer = spareWriteBuffers.popLast() else { return [] }
        spareWriteBufferBytes -= buffer.capacity
        return buffer
    }

    func returnWriteBuffer(_ buffer: inout [UInt8]) {
        let capacity = buffer.capacity
        if capacity > 0 && spareWriteBuffers.count < EventLoop.spareWriteBufferLimit
            && spareWriteBufferBytes + capacity <= EventLoop.spareWriteBufferByteLimit {
            buffer.removeAll(keepingCapacity: true)
            spareWriteBuffers.append(buffer)
            spareWriteBufferBytes += capacity
        }
        buffer = []
    }

    /// Connections that wrote during the current event and must flush before it ends.
    private var connectionsToFlush: [Connection] = []
    /// TLS streams holding plaintext written during this batch, encrypted at its end.
    private var streamsToEncrypt: [TLSStream] = []
    /// Armed timers, unretained: a timer leaves the list before it is released (see `LoopTimer`).
    private var timers: [Unmanaged<LoopTimer>] = []
    private var tickSource: DispatchSourceTimer?
    private var isTicking = false
    /// How often armed timers are checked; timers fire up to this late.
    public static let timerTick = DispatchTimeInterval.milliseconds(50)

    init(index: Int, readBufferSize: Int, spinMicroseconds: Int) {
        self.index = index
        // Not the default (overcommit) target: that one hands each wake-up to whichever of up to
        // ~9 pool threads is free, so 2 cores kept switching between them (1 KiB keep-alive: 9
        // threads, 6-7 us idle CPU per request). The width-limited global queue keeps about one
        // thread per core busy with the loops; loops never block, so that width is enough.
        self.queue = DispatchQueue(label: "lookout.loop.\(index)", qos: .userInteractive,
                                   target: .global(qos: .userInteractive))
        self.readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readBufferSize, alignment: 16)
        self.ciphertextBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        poller.start(on: self, spinMicroseconds: spinMicroseconds)
    }

    deinit {
        readBuffer.deallocate()
        ciphertextBuffer.deallocate()
        if let tickSource {
            if !isTicking { tickSource.resume() }
            tickSource.cancel()
        }
    }

    /// True while an event is being handled; writes made then are flushed together at its end.
    private var inBatch = false

    /// Runs `work` on this loop as one batch (writes it makes are flushed when it returns). Called
    /// on the loop's poll thread, the work waits for the thread's next turn, after the current
    /// batch: no Dispatch worker is woken for it.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        if isOnPollThread {
            nextTurn.append(work)
        } else {
            queue.async { [self] in runBatch(work) }
        }
    }

    /// Runs `work` on this loop once the current batch's events are all delivered, before the
    /// writes they made are flushed: a protocol session that gathers frames from many events
    /// (HTTP/2) writes them in this batch, not one turn later. Outside a batch, or off the poll
    /// thread, it is `execute`.
    public func executeAtBatchEnd(_ work: @escaping @Sendable () -> Void) {
        if inBatch, isOnPollThread {
            atBatchEnd.append(work)
        } else {
            execute(work)
        }
    }

    /// Sends what the current batch has gathered so far — its batch-end work, then its writes —
    /// and lets the batch go on. A delivery whose writes another process waits for (requests
    /// for an origin) calls it at its end, so that process works on them on the other core while
    /// the loop handles the batch's other events. Flushing more often than once per delivery
    /// costs more than it gains: smaller writes make every peer downstream turn over more often.
    /// Only at the end of a delivery, never from inside a protocol library's callback.
    public func sendGatheredSoFar() {
        guard inBatch else { return }
        runBatchEndWork()
        flushPending()
    }

    /// The poll thread's id (`pthread_t`), set by that thread when it starts; 0 until then.
    let pollThread = Atomic<UInt>(0)
    private var isOnPollThread: Bool {
        pollThread.load(ordering: .relaxed) == UInt(bitPattern: Int(pthread_self()))
    }
    /// The poll thread's kernel thread id (its `/proc/self/task` entry; tests), 0 until it starts.
    let pollThreadKernelID = Atomic<Int32>(0)
    /// How many times the poll thread polled before sleeping (`PollSpin`), and for how long in
    /// all: written by that thread only, read for the status page.
    let spinCount = Atomic<Int>(0)
    let spinNanoseconds = Atomic<Int64>(0)
    /// Work the poll thread runs on its next turn (see `execute`).
    private var nextTurn: [@Sendable () -> Void] = []
    private var runningTurn: [@Sendable () -> Void] = []
    /// Work for the end of the current batch (see `executeAtBatchEnd`).
    private var atBatchEnd: [@Sendable () -> Void] = []
    private var runningAtBatchEnd: [@Sendable () -> Void] = []
    /// Rounds of batch-end work (work scheduling more) before the rest waits for the next turn.
    private static let batchEndRounds = 4

    /// One turn of the poll thread, on the queue: the work put off to this turn, then `deliver`
    /// (the readiness it collected), as one batch. Returns whether work waits for the next turn,
    /// in which case the thread must not block.
    func runPollTurn(_ deliver: () -> Void) -> Bool {
        runBatch {
            if !nextTurn.isEmpty {
                swap(&nextTurn, &runningTurn)
                for work in runningTurn { work() }
                runningTurn.removeAll(keepingCapacity: true)
            }
            deliver()
        }
        return !nextTurn.isEmpty
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
        runBatchEndWork()
        flushPending()
        inBatch = false
    }

    private func runBatchEndWork() {
        var rounds = 0
        while !atBatchEnd.isEmpty {
            guard rounds < Self.batchEndRounds else {
                nextTurn.append(contentsOf: atBatchEnd)
                atBatchEnd.removeAll(keepingCapacity: true)
                return
            }
            rounds += 1
            swap(&atBatchEnd, &runningAtBatchEnd)
            for work in runningAtBatchEnd { work() }
            runningAtBatchEnd.removeAll(keepingCapacity: true)
        }
    }

    /// Whether writes should be deferred to the end of the current batch.
    var isBatching: Bool { inBatch }

    /// Traps in debug builds when called off this loop.
    @inline(__always) public func assertOnLoop() {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))
        #endif
    }

    // MARK: - Timers

    func register(_ timer: LoopTimer) {
        timer.slot = timers.count
        timers.append(Unmanaged.passUnretained(timer))
        if !isTicking { startTicking() }
    }

    func unregister(_ timer: LoopTimer) {
        let slot = timer.slot
        let last = timers.count - 1
        if slot != last {
            timers[slot] = timers[last]
            timers[slot].takeUnretainedValue().slot = slot
        }
        timers.removeLast()
        timer.slot = -1
    }

    private func startTicking() {
        isTicking = true
        if let tickSource {
            tickSource.resume()
            return
        }
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + EventLoop.timerTick, repeating: EventLoop.timerTick, leeway: .milliseconds(10))
        // Weak, not unowned: the last reference to a loop may go on another thread while a tick is
        // already on its way, and an unowned load of a deinitialising object traps.
        source.setEventHandler { [weak self] in self?.tick() }
        tickSource = source
        source.activate()
    }

    /// Fires the timers whose deadline has passed. Handlers may arm, cancel or release other
    /// timers, so due timers are held weakly and re-checked one by one.
    private func tick() {
        let now = DispatchTime.now().uptimeNanoseconds
        var due: [WeakTimer] = []
        for entry in timers {
            let timer = entry.takeUnretainedValue()
            if timer.deadline <= now { due.append(WeakTimer(timer: timer)) }
        }
        if !due.isEmpty {
            runBatch {
                for entry in due {
                    guard let timer = entry.timer, timer.slot >= 0, timer.deadline <= now else { continue }
                    unregister(timer)
                    timer.fire()
                }
            }
        }
        if timers.isEmpty && isTicking {
            isTicking = false
            tickSource?.suspend()
        }
    }

    // MARK: - Write batching

    func needsFlush(_ connection: Connection) {
        connectionsToFlush.append(connection)
    }

    func needsEncryption(_ stream: TLSStream) {
        streamsToEncrypt.append(stream)
    }

    /// Encrypts what TLS streams gathered, then flushes every connection that wrote during this
    /// event; called when an event handler returns. A flush can tell an owner there is room again
    /// and so bring more writes: this goes round until nothing is left.
    func flushPending() {
        repeat {
            var index = 0
            while index < streamsToEncrypt.count {
                streamsToEncrypt[index].encryptGathered()
                index += 1
            }
            streamsToEncrypt.removeAll(keepingCapacity: true)
            index = 0
            while index < connectionsToFlush.count {
                connectionsToFlush[index].flushNow()
                index += 1
            }
            connectionsToFlush.removeAll(keepingCapacity: true)
        } while !streamsToEncrypt.isEmpty
    }
}

private struct WeakTimer {
    weak var timer: LoopTimer?
}

/// A fixed set of event loops; connections are spread over them round-robin.
public final class EventLoopGroup: @unchecked Sendable {  // `nextIndex` is only used from the accept queue
    public let loops: [EventLoop]
    private var nextIndex = 0

    /// How long each loop's poll thread may poll before sleeping (`event_loop_spin_us`; see
    /// `PollSpin`); 0 = never.
    public let spinMicroseconds: Int

    /// `count` 0 means one loop per core.
    public init(count: Int, readBufferSize: Int = 128 * 1024, spinMicroseconds: Int = 50) {
        let n = count > 0 ? count : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        self.spinMicroseconds = spinMicroseconds
        loops = (0..<n).map { EventLoop(index: $0, readBufferSize: readBufferSize, spinMicroseconds: spinMicroseconds) }
    }

    /// Whether the kernel reports CPU pressure, without which loops never spin.
    public static var canSpin: Bool { CPUPressureFile.isAvailable }

    /// How many times the loops polled before sleeping since they started, and for how long in
    /// all: what `event_loop_spin_us` has cost.
    public var spinTotals: (spins: Int, nanoseconds: Int64) {
        loops.reduce((0, 0)) { totals, loop in
            (totals.0 + loop.spinCount.load(ordering: .relaxed), totals.1 + loop.spinNanoseconds.load(ordering: .relaxed))
        }
    }

    /// The next loop in round-robin order. Not thread-safe: call from one queue.
    public func next() -> EventLoop {
        let loop = loops[nextIndex]
        nextIndex = (nextIndex + 1) % loops.count
        return loop
    }
}
