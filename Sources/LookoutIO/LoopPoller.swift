import CLookoutSocket
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Something on an event loop that waits for socket readiness (a connection, a connect in
/// progress). Called on the loop with the epoll event mask.
protocol PollHandler: AnyObject {
    func pollDidReport(_ mask: UInt32)
}

/// One epoll set per event loop, waited on by the loop's own poll thread, which enters the loop's
/// queue (`sync`) to deliver what became ready.
///
/// A Dispatch source per socket cost a round trip through Dispatch's manager thread for every
/// readiness event (the source is re-armed with `epoll_ctl` and the manager woken through an
/// eventfd): about 2 thread switches per event, which profiling showed was most of the proxy's
/// time on keep-alive traffic. One Dispatch source on the loop's epoll descriptor still cost the
/// manager's wake-up, its hand-off to a worker thread and its re-arm for every batch: 14–17
/// thread switches per MiB on one tunnelled stream, where a C relay blocking in `epoll_wait`
/// needs 3.6. So a thread per loop blocks in `epoll_wait` itself and runs the batch on the loop's
/// serial queue with `DispatchQueue.sync`, which executes on the calling thread when the queue is
/// idle: one wake-up per batch, and every connection's state is still touched only on the queue
/// (work sent with `async`, timers included, runs there between batches).
///
/// Sockets are registered edge-triggered, once, for both directions: pausing and resuming reads
/// or arming writes is a flag, never a system call.
final class LoopPoller: @unchecked Sendable {  // confined to the owning loop's queue
    private struct Slot {
        var generation: UInt32 = 0
        /// Unretained: a handler removes itself before it is released.
        unowned(unsafe) var handler: (any PollHandler)?
    }

    private let epollFD: Int32
    /// Written once, in `deinit`, to end the poll thread.
    private let stopFD: Int32
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    static let batch = 256
    /// Rounds of `epoll_wait` per batch on the queue, so one loop's flood cannot keep its queue
    /// from the work sent to it with `async`.
    private static let roundsPerBatch = 4
    /// The token of `stopFD` (slots are 32-bit, so no registration carries it).
    static let stopToken = UInt64.max
    private var started = false
    /// Reports dropped because their registration was removed earlier in the same batch (tests).
    private(set) var staleReportCount = 0

    init() {
        epollFD = lookout_epoll_create()
        precondition(epollFD >= 0, "epoll_create1 failed: errno \(errno)")
        stopFD = lookout_epoll_add_wake(epollFD, LoopPoller.stopToken)
        precondition(stopFD >= 0, "eventfd failed: errno \(errno)")
    }

    deinit {
        // The poll thread owns both descriptors from `start` on and closes them when it stops.
        if started {
            lookout_wake(stopFD)
        } else {
            Glibc.close(stopFD)
            Glibc.close(epollFD)
        }
    }

    /// Starts the poll thread that delivers readiness on `loop`'s queue; it polls up to
    /// `spinMicroseconds` before sleeping when `PollSpin` says so.
    func start(on loop: EventLoop, spinMicroseconds: Int) {
        started = true
        PollThread(epollFD: epollFD, stopFD: stopFD, loop: loop, poller: self, spin: PollSpin(microseconds: spinMicroseconds))
            .start(name: "lookout.poll.\(loop.index)")
    }

    /// Watches `fd` (edge-triggered) for `handler`; returns the registration to pass to `remove`.
    func add(_ fd: Int32, handler: any PollHandler) -> PollRegistration? {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = slots.count
            slots.append(Slot())
        }
        slots[slot].handler = handler
        let token = UInt64(slots[slot].generation) << 32 | UInt64(slot)
        guard lookout_epoll_add(epollFD, fd, token) == 0 else {
            release(slot)
            return nil
        }
        return PollRegistration(fd: fd, slot: slot)
    }

    /// Stops watching; events already collected for it are dropped. Call before closing the descriptor.
    func remove(_ registration: PollRegistration) {
        _ = lookout_epoll_remove(epollFD, registration.fd)
        release(registration.slot)
    }

    /// Stops watching a descriptor that is closed right after. Closing takes it out of the epoll
    /// set by itself (Lookout never duplicates descriptors, and the last close of a file leaves
    /// every epoll set), so only the slot is released: one `epoll_ctl` less per connection.
    func removeBeforeClosing(_ registration: PollRegistration) {
        release(registration.slot)
    }

    private func release(_ slot: Int) {
        slots[slot].handler = nil
        slots[slot].generation &+= 1
        freeSlots.append(slot)
    }

    /// Delivers `count` reports the poll thread collected, then whatever else is ready now (up to
    /// a bound). A handler may close others (or itself) meanwhile: the generation in each token
    /// tells a live registration from a reused slot.
    func deliver(_ tokens: UnsafeMutablePointer<UInt64>, _ masks: UnsafeMutablePointer<UInt32>, count: Int) {
        var n = count
        for round in 0..<LoopPoller.roundsPerBatch {
            for i in 0..<n {
                let token = tokens[i]
                if token == LoopPoller.stopToken { continue }
                let slot = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
                guard slot < slots.count, slots[slot].generation == UInt32(truncatingIfNeeded: token >> 32),
                      let handler = slots[slot].handler else {
                    staleReportCount &+= 1
                    continue
                }
                handler.pollDidReport(masks[i])
            }
            guard n == LoopPoller.batch, round + 1 < LoopPoller.roundsPerBatch else { return }
            n = Int(lookout_epoll_poll(epollFD, tokens, masks, Int32(LoopPoller.batch), 0))
            guard n > 0 else { return }
        }
    }
}

/// The thread that waits on one loop's epoll set. It holds the loop and poller weakly: when the
/// loop goes, the poller's `deinit` wakes it through the stop descriptor and it closes both
/// descriptors and ends.
private final class PollThread: @unchecked Sendable {  // used only by its own thread after `start`
    private let epollFD: Int32
    private let stopFD: Int32
    private weak var loop: EventLoop?
    private weak var poller: LoopPoller?
    private let tokens: UnsafeMutablePointer<UInt64>
    private let masks: UnsafeMutablePointer<UInt32>
    private var name = ""
    private var spin: PollSpin
    /// What a turn on the loop's queue delivers and answers: set by this thread before `sync`,
    /// read after it (the queue runs the turn while this thread waits).
    private var turnReports = 0
    private var turnLeftWork = false
    private var turnFoundNoLoop = false

    init(epollFD: Int32, stopFD: Int32, loop: EventLoop, poller: LoopPoller, spin: PollSpin) {
        self.epollFD = epollFD
        self.stopFD = stopFD
        self.loop = loop
        self.poller = poller
        self.spin = spin
        tokens = .allocate(capacity: LoopPoller.batch)
        masks = .allocate(capacity: LoopPoller.batch)
    }

    func start(name: String) {
        self.name = name
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&thread, nil, { raw in
            let pollThread = Unmanaged<PollThread>.fromOpaque(raw!).takeRetainedValue()
            pollThread.name.withCString { lookout_name_thread($0) }
            pollThread.run()
            return nil
        }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
        pthread_detach(thread)
    }

    private func run() {
        loop?.pollThread.store(UInt(bitPattern: Int(pthread_self())), ordering: .relaxed)
        loop?.pollThreadKernelID.store(lookout_thread_id(), ordering: .relaxed)
        var timeout: Int32 = -1
        let pressure = CPUPressureFile(needed: spin.nanoseconds > 0)
        // The turn, made once: `DispatchQueue.sync` with a closure boxes the closure and its
        // result on every call (two allocations per poll turn, about three per proxied request);
        // a work item's block is made here and run by every turn.
        let turn = DispatchWorkItem { self.runTurn() }
        while true {
            let n = timeout == 0 ? poll(timeout: 0) : pollOrSleep(pressure)
            guard n >= 0 else { continue }
            if (0..<n).contains(where: { tokens[$0] == LoopPoller.stopToken }) { break }
            guard let queue = loop?.queue else { break }
            turnReports = n
            queue.sync(execute: turn)
            if turnFoundNoLoop { break }
            // Work put off to the next turn runs after one look at what is ready, without waiting.
            timeout = turnLeftWork ? 0 : -1
        }
        Glibc.close(stopFD)
        Glibc.close(epollFD)
        tokens.deallocate()
        masks.deallocate()
    }

    /// One turn on the loop's queue: the reports this thread collected, then the loop's own work.
    private func runTurn() {
        guard let loop, let poller else {
            turnFoundNoLoop = true
            return
        }
        let n = turnReports
        turnLeftWork = loop.runPollTurn { if n > 0 { poller.deliver(tokens, masks, count: n) } }
    }

    private func poll(timeout: Int32) -> Int {
        Int(lookout_epoll_poll(epollFD, tokens, masks, Int32(LoopPoller.batch), timeout))
    }

    /// Waits for readiness with nothing else to do: polls first when `spin` says so (see
    /// `PollSpin`), then sleeps, timing the sleep for the next decision.
    private func pollOrSleep(_ pressure: borrowing CPUPressureFile) -> Int {
        guard spin.nanoseconds > 0 else { return poll(timeout: -1) }
        let now = lookout_monotonic_ns()
        if spin.needsPressureSample(now: now) {
            spin.samplePressure(totalMicroseconds: pressure.someTotalMicroseconds(), now: now)
        }
        if spin.shouldSpin {
            let spinStart = lookout_monotonic_ns()
            var gaveWay: Int32 = 0
            let n = Int(lookout_epoll_spin(epollFD, tokens, masks, Int32(LoopPoller.batch), spin.nanoseconds, &gaveWay))
            if gaveWay != 0 { spin.spinGaveWay() }
            if let loop {
                loop.spinCount.add(1, ordering: .relaxed)
                loop.spinNanoseconds.add(lookout_monotonic_ns() - spinStart, ordering: .relaxed)
            }
            if n != 0 { return n }
        }
        let asleep = lookout_monotonic_ns()
        let n = poll(timeout: -1)
        spin.didSleep(nanoseconds: lookout_monotonic_ns() - asleep)
        return n
    }
}

/// A descriptor's place in a `LoopPoller`.
struct PollRegistration {
    let fd: Int32
    let slot: Int
}

extension UInt32 {
    /// Input, end of input, or an error a read will report.
    static let pollReadable = UInt32(LOOKOUT_POLL_IN | LOOKOUT_POLL_RDHUP | LOOKOUT_POLL_HUP | LOOKOUT_POLL_ERR)
    /// The peer finished sending or the connection failed: a read will say so.
    static let pollPeerClosed = UInt32(LOOKOUT_POLL_RDHUP | LOOKOUT_POLL_HUP | LOOKOUT_POLL_ERR)
    /// Room to write, or an error a write will report.
    static let pollWritable = UInt32(LOOKOUT_POLL_OUT | LOOKOUT_POLL_HUP | LOOKOUT_POLL_ERR)
}
