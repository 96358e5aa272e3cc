import Dispatch
import Synchronization
import LookoutSync

/// Fans events out to several monitors, each on its own queue, without ever blocking the caller.
///
/// Each monitor has a bounded mailbox. Posting appends under a short lock and, only when the
/// mailbox was empty, schedules one drain on the monitor's queue a few milliseconds later — so
/// events cost one thread wake-up per batch, not one per event (a wake-up per request measurably
/// slowed the proxy). A monitor that falls behind loses the newest events once its mailbox is
/// full; the losses are counted (`droppedEventCount`) instead of slowing traffic.
public final class CompositeEventMonitor: Sendable {
    private final class Mailbox: Sendable {
        /// What the posting threads and the monitor's queue share, under `state`'s lock.
        struct State: ~Copyable {
            var events: [LookoutEvent] = []
            var draining = false
            /// The last batch the monitor handled, waiting for the next `post` to release it.
            var handled: [LookoutEvent] = []
            /// Counts the batches handed back, so a sweep can tell a batch that waited a whole
            /// period from a newer one.
            var handedBack: UInt64 = 0
            var sweepScheduled = false
        }

        let monitor: EventMonitor
        /// The monitor's interest, read on every post; a monitor may change it (`updateInterest`).
        let interest: Atomic<UInt8>
        let limit: Int
        let state = Guarded<State>(State())
        let dropped = Atomic<UInt64>(0)

        /// How long events gather before a drain; bounds how late a record is written.
        static let batchWindow = DispatchTimeInterval.milliseconds(5)
        /// How long a handled batch waits for a post to release it before the monitor's queue does.
        static let handBackWindow = DispatchTimeInterval.seconds(1)

        init(monitor: EventMonitor, limit: Int) {
            self.monitor = monitor
            self.interest = Atomic(monitor.interest.rawValue)
            self.limit = limit
        }

        func post(_ event: LookoutEvent) {
            var handled: [LookoutEvent] = []
            let scheduleDrain: Bool = state.withLock { state in
                if !state.handled.isEmpty { swap(&handled, &state.handled) }
                if state.events.count >= limit {
                    dropped.add(1, ordering: .relaxed)
                    return false
                }
                state.events.append(event)
                if state.draining { return false }
                state.draining = true
                return true
            }
            if scheduleDrain {
                monitor.queue.asyncAfter(deadline: .now() + Mailbox.batchWindow) { self.drain() }
            }
            // `handled` goes here, outside the lock: see `handBack`.
        }

        private func drain() {
            while true {
                var batch: [LookoutEvent] = state.withLock { state in
                    if state.events.isEmpty {
                        state.draining = false
                        return []
                    }
                    let batch = state.events
                    state.events = []
                    state.events.reserveCapacity(min(batch.count, 1024))
                    return batch
                }
                if batch.isEmpty { return }
                for event in batch { monitor.receive(event) }
                handBack(&batch)
            }
        }

        /// Leaves the handled batch for the next `post` to release, on the thread that built its
        /// events. glibc gives each thread its own malloc arena, and a free of another arena's
        /// memory takes that arena's lock: freed here, every event's memory went back under the
        /// lock the event loop takes for its own allocations, and the two threads queued on it
        /// (futex waits and wake-ups were 8 % of the loop's time at 100 HTTP/2 streams). Released
        /// by the posting thread, the memory goes to that thread's cache and serves its next
        /// allocations. A batch nobody claims (no post for `handBackWindow`) is released here.
        private func handBack(_ batch: inout [LookoutEvent]) {
            let sweep: UInt64? = state.withLock { state in
                swap(&state.handled, &batch)  // `batch` now holds the previous one, if unclaimed
                state.handedBack &+= 1
                guard !state.sweepScheduled else { return nil }
                state.sweepScheduled = true
                return state.handedBack
            }
            if let sweep { scheduleSweep(seen: sweep) }
        }

        private func scheduleSweep(seen: UInt64) {
            monitor.queue.asyncAfter(deadline: .now() + Mailbox.handBackWindow) { self.sweep(seen: seen) }
        }

        /// Releases a handed-back batch that waited a whole window (the proxy went quiet).
        private func sweep(seen: UInt64) {
            var stale: [LookoutEvent] = []
            let again: UInt64? = state.withLock { state in
                if state.handled.isEmpty || state.handedBack == seen {
                    swap(&stale, &state.handled)
                    state.sweepScheduled = false
                    return nil
                }
                return state.handedBack
            }
            if let again { scheduleSweep(seen: again) }
        }

        /// Waits until everything posted so far has been handled.
        func flush() {
            monitor.queue.sync {}
            while state.withLock({ $0.draining || !$0.events.isEmpty }) {
                monitor.queue.sync {}
            }
        }
    }

    private let mailboxes: [Mailbox]
    /// The union of what the monitors want; events outside it are never built.
    private let combinedInterest: Atomic<UInt8>

    /// `mailboxLimit` bounds the events waiting for each monitor.
    public init(monitors: [EventMonitor], mailboxLimit: Int = 65536) {
        mailboxes = monitors.map { Mailbox(monitor: $0, limit: max(1, mailboxLimit)) }
        combinedInterest = Atomic(monitors.reduce(EventInterest()) { $0.union($1.interest) }.rawValue)
        for monitor in monitors { monitor.didJoin(self) }
    }

    /// The union of what the monitors want now.
    public var interest: EventInterest { EventInterest(rawValue: combinedInterest.load(ordering: .relaxed)) }

    /// True when some monitor wants events of `interest`.
    @inline(__always) public func wants(_ interest: EventInterest) -> Bool {
        !self.interest.isDisjoint(with: interest)
    }

    /// Reads `monitor.interest` again: a monitor that wants lifecycle events only at times (a
    /// live stream with a verbose subscriber) asks for them, and stops, without a restart.
    /// Events already posted are unaffected; the next ones follow the new interest.
    public func updateInterest(of monitor: EventMonitor) {
        for mailbox in mailboxes where mailbox.monitor === monitor {
            mailbox.interest.store(monitor.interest.rawValue, ordering: .relaxed)
        }
        let union = mailboxes.reduce(UInt8(0)) { $0 | $1.interest.load(ordering: .relaxed) }
        combinedInterest.store(union, ordering: .relaxed)
    }

    /// Delivers `event` to every monitor that wants it; never blocks on a monitor.
    public func post(_ event: LookoutEvent) {
        let interest = event.interest
        for mailbox in mailboxes
        where EventInterest(rawValue: mailbox.interest.load(ordering: .relaxed)).contains(interest) {
            mailbox.post(event)
        }
    }

    /// Events dropped because a monitor's mailbox was full, over all monitors.
    public var droppedEventCount: UInt64 {
        mailboxes.reduce(0) { $0 + $1.dropped.load(ordering: .relaxed) }
    }

    /// Blocks until every monitor has handled every event posted before the call (shutdown only).
    public func flush() {
        for mailbox in mailboxes { mailbox.flush() }
    }
}
