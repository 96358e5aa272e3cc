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

/// One epoll set per event loop, watched by a single Dispatch read source on the loop's queue.
///
/// A Dispatch source per socket costs a round trip through Dispatch's manager thread for every
/// readiness event (the source is re-armed with `epoll_ctl` and the manager woken through an
/// eventfd): about 2 thread switches per event, which profiling showed was most of the proxy's
/// time on keep-alive traffic. Here Dispatch watches only the loop's epoll descriptor, and one
/// wake-up delivers every socket that became ready meanwhile. Sockets are registered
/// edge-triggered, once, for both directions: pausing and resuming reads or arming writes is a
/// flag, never a system call.
final class LoopPoller: @unchecked Sendable {  // confined to the owning loop's queue
    private struct Slot {
        var generation: UInt32 = 0
        /// Unretained: a handler removes itself before it is released.
        unowned(unsafe) var handler: (any PollHandler)?
    }

    private let epollFD: Int32
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private let tokens: UnsafeMutablePointer<UInt64>
    private let masks: UnsafeMutablePointer<UInt32>
    private static let batch = 256
    /// Rounds of `epoll_wait` per wake-up, so one loop's flood cannot keep its queue forever.
    private static let roundsPerWake = 4
    private var source: DispatchSourceRead?
    /// Reports dropped because their registration was removed earlier in the same batch (tests).
    private(set) var staleReportCount = 0

    init() {
        epollFD = lookout_epoll_create()
        precondition(epollFD >= 0, "epoll_create1 failed: errno \(errno)")
        tokens = .allocate(capacity: LoopPoller.batch)
        masks = .allocate(capacity: LoopPoller.batch)
    }

    deinit {
        source?.cancel()
        tokens.deallocate()
        masks.deallocate()
        // The source's cancel handler closes the descriptor; without a source, close it here.
        if source == nil { Glibc.close(epollFD) }
    }

    /// Starts watching the epoll set on `loop`'s queue.
    func start(on loop: EventLoop) {
        let source = DispatchSource.makeReadSource(fileDescriptor: epollFD, queue: loop.queue)
        let fd = epollFD
        source.setEventHandler { [weak self, weak loop] in
            guard let self, let loop else { return }
            loop.runBatch { self.drain() }
        }
        source.setCancelHandler { Glibc.close(fd) }
        self.source = source
        source.activate()
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

    /// Delivers everything ready now. A handler may close others (or itself) meanwhile: the
    /// generation in each token tells a live registration from a reused slot.
    private func drain() {
        for _ in 0..<LoopPoller.roundsPerWake {
            let n = Int(lookout_epoll_poll(epollFD, tokens, masks, Int32(LoopPoller.batch)))
            guard n > 0 else { return }
            for i in 0..<n {
                let token = tokens[i]
                let slot = Int(truncatingIfNeeded: token & 0xFFFF_FFFF)
                guard slot < slots.count, slots[slot].generation == UInt32(truncatingIfNeeded: token >> 32),
                      let handler = slots[slot].handler else {
                    staleReportCount &+= 1
                    continue
                }
                handler.pollDidReport(masks[i])
            }
            if n < LoopPoller.batch { return }
        }
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
