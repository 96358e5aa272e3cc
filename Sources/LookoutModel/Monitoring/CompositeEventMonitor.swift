import Dispatch
import Synchronization
import LookoutSync

/// Fans events out to several monitors, each on its own queue, without ever blocking the caller.
///
/// Monitors that run on the same queue share a mailbox, and each event is handed to each of them
/// in turn: the log, the live view and OpenTelemetry all read an exchange's summary while it is
/// still in cache, and a post takes one lock for all of them. Each mailbox is bounded. Posting
/// appends under a short lock and, only when the mailbox was empty, schedules one drain on the
/// monitors' queue a few milliseconds later — so events cost one thread wake-up per batch, not
/// one per event (a wake-up per request measurably slowed the proxy). A monitor that falls behind
/// loses the newest events once its mailbox is full; the losses are counted
/// (`droppedEventCount`) instead of slowing traffic.
public final class CompositeEventMonitor: Sendable {
    private final class Mailbox: Sendable {
        /// What the posting threads and the monitors' queue share, under `state`'s lock.
        struct State: ~Copyable {
            /// Each event with the members it is for (bit `i`: `members[i]`), as their interest
            /// was when it was posted.
            var events: [(LookoutEvent, UInt8)] = []
            var draining = false
            /// The last batch the monitors handled, waiting for the next `post` to release it.
            var handled: [(LookoutEvent, UInt8)] = []
            /// Counts the batches handed back, so a sweep can tell a batch that waited a whole
            /// period from a newer one.
            var handedBack: UInt64 = 0
            var sweepScheduled = false
        }

        /// The monitors on `queue`, in the order they were given (at most `maxMembers`).
        let members: [EventMonitor]
        let queue: DispatchQueue
        /// The members' interests, read on every post, eight bits each (member `i` at bit `8 i`);
        /// a monitor may change its own (`updateInterest`).
        let interests: Atomic<UInt64>
        let limit: Int
        let state = Guarded<State>(State())
        /// Events dropped, counted once for each member that lost them.
        let dropped = Atomic<UInt64>(0)
        static let maxMembers = 8

        /// How long events gather before a drain; bounds how late a record is written.
        static let batchWindow = DispatchTimeInterval.milliseconds(5)
        /// How long a handled batch waits for a post to release it before the monitors' queue does.
        static let handBackWindow = DispatchTimeInterval.seconds(1)

        init(members: [EventMonitor], limit: Int) {
            self.members = members
            self.queue = members[0].queue
            self.interests = Atomic(members.indices.reduce(UInt64(0)) { $0 | UInt64(members[$1].interest.rawValue) << (8 * $1) })
            self.limit = limit
        }

        /// The members that want events of `interest`, as a bit set.
        @inline(__always) func recipients(of interest: EventInterest) -> UInt8 {
            let all = interests.load(ordering: .relaxed)
            var mask: UInt8 = 0
            for index in members.indices where EventInterest(rawValue: UInt8(truncatingIfNeeded: all >> (8 * index))).contains(interest) {
                mask |= 1 << index
            }
            return mask
        }

        /// The union of the members' interests.
        var interestUnion: UInt8 {
            let all = interests.load(ordering: .relaxed)
            return members.indices.reduce(UInt8(0)) { $0 | UInt8(truncatingIfNeeded: all >> (8 * $1)) }
        }

        func updateInterest(of monitor: EventMonitor) {
            guard let index = members.firstIndex(where: { $0 === monitor }) else { return }
            let shift = UInt64(8 * index)
            var current = interests.load(ordering: .relaxed)
            while true {
                let wanted = current & ~(0xFF << shift) | UInt64(monitor.interest.rawValue) << shift
                let (exchanged, original) = interests.compareExchange(expected: current, desired: wanted, ordering: .relaxed)
                if exchanged { return }
                current = original
            }
        }

        func post(_ event: LookoutEvent, to recipients: UInt8) {
            var handled: [(LookoutEvent, UInt8)] = []
            let scheduleDrain: Bool = state.withLock { state in
                if !state.handled.isEmpty { swap(&handled, &state.handled) }
                if state.events.count >= limit {
                    dropped.add(UInt64(recipients.nonzeroBitCount), ordering: .relaxed)
                    return false
                }
                state.events.append((event, recipients))
                if state.draining { return false }
                state.draining = true
                return true
            }
            if scheduleDrain {
                queue.asyncAfter(deadline: .now() + Mailbox.batchWindow) { self.drain() }
            }
            // `handled` goes here, outside the lock: see `handBack`.
        }

        private func drain() {
            while true {
                var batch: [(LookoutEvent, UInt8)] = state.withLock { state in
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
                // Lent in place: iterating the arrays would copy each event and each monitor (a
                // retain and a release for every delivery).
                batch.withUnsafeBufferPointer { events in
                    members.withUnsafeBufferPointer { monitors in
                        for entry in events.indices {
                            let recipients = events[entry].1
                            for index in monitors.indices where recipients & (1 << index) != 0 {
                                monitors[index].receive(events[entry].0)
                            }
                        }
                    }
                }
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
        private func handBack(_ batch: inout [(LookoutEvent, UInt8)]) {
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
            queue.asyncAfter(deadline: .now() + Mailbox.handBackWindow) { self.sweep(seen: seen) }
        }

        /// Releases a handed-back batch that waited a whole window (the proxy went quiet).
        private func sweep(seen: UInt64) {
            var stale: [(LookoutEvent, UInt8)] = []
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
            queue.sync {}
            while state.withLock({ $0.draining || !$0.events.isEmpty }) {
                queue.sync {}
            }
        }
    }

    private let mailboxes: [Mailbox]
    /// The union of what the monitors want; events outside it are never built.
    private let combinedInterest: Atomic<UInt8>

    /// `mailboxLimit` bounds the events waiting for each queue's monitors.
    public init(monitors: [EventMonitor], mailboxLimit: Int = 65536) {
        mailboxes = Self.byQueue(monitors).map { Mailbox(members: $0, limit: max(1, mailboxLimit)) }
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
        for mailbox in mailboxes { mailbox.updateInterest(of: monitor) }
        let union = mailboxes.reduce(UInt8(0)) { $0 | $1.interestUnion }
        combinedInterest.store(union, ordering: .relaxed)
    }

    /// The monitors grouped by the queue they run on, in the order first seen; a group holds at
    /// most `Mailbox.maxMembers` (a further one on the same queue starts another group).
    private static func byQueue(_ monitors: [EventMonitor]) -> [[EventMonitor]] {
        var groups: [[EventMonitor]] = []
        for monitor in monitors {
            if let index = groups.firstIndex(where: { $0[0].queue === monitor.queue && $0.count < Mailbox.maxMembers }) {
                groups[index].append(monitor)
            } else {
                groups.append([monitor])
            }
        }
        return groups
    }

    /// Delivers `event` to every monitor that wants it; never blocks on a monitor.
    public func post(_ event: LookoutEvent) {
        let interest = event.interest
        for mailbox in mailboxes {
            let recipients = mailbox.recipients(of: interest)
            if recipients != 0 { mailbox.post(event, to: recipients) }
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
