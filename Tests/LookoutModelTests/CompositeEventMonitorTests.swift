import Dispatch
import Glibc
import Synchronization
import Testing
@testable import LookoutModel

private final class Recorder: @unchecked Sendable {
    let names = Mutex<[String]>([])
}

/// The thread that released a probe, once it has been released.
private final class ReleaseRecord: Sendable {
    let thread = Mutex<pthread_t?>(nil)
    var releasedOn: pthread_t? { thread.withLock { $0 } }
}

/// Records the thread that releases it.
private final class ReleaseProbe: Sendable {
    let record: ReleaseRecord
    init(_ record: ReleaseRecord) { self.record = record }
    deinit { record.thread.withLock { $0 = pthread_self() } }
}

/// An event kind carrying a probe, to see where the event's memory goes back.
private struct ProbedEvent: EventKind {
    static let name = "test.probed"
    let probe: ReleaseProbe
    func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {}
}

@Suite struct CompositeEventMonitorTests {
    private func event(_ n: UInt64) -> LookoutEvent {
        LookoutEvent(EventContext(connectionID: n), TaskDidCreate(origin: "o:\(n)", attempt: 1))
    }

    @Test func deliversInOrderToEachMonitorOnItsQueue() {
        let a = Recorder(), b = Recorder()
        let queueA = DispatchQueue(label: "a"), queueB = DispatchQueue(label: "b")
        let monitorA = ClosureEventMonitor(queue: queueA) { event in
            dispatchPrecondition(condition: .onQueue(queueA))
            a.names.withLock { $0.append(event.context.connectionID.description) }
        }
        let monitorB = ClosureEventMonitor(queue: queueB) { event in
            b.names.withLock { $0.append(event.context.connectionID.description) }
        }
        let composite = CompositeEventMonitor(monitors: [monitorA, monitorB])
        for n in 0..<1000 { composite.post(event(UInt64(n))) }
        composite.flush()
        let expected = (0..<1000).map(String.init)
        #expect(a.names.withLock { $0 } == expected)
        #expect(b.names.withLock { $0 } == expected)
        #expect(composite.droppedEventCount == 0)
    }

    /// Monitors on one queue share a mailbox: each event goes to each of them in turn, to those
    /// whose interest it is in; a drop counts once for each monitor that lost the event.
    @Test func monitorsOnOneQueueAreHandedEachEventInTurn() {
        let shared = DispatchQueue(label: "shared")
        let seen = Recorder()
        let first = ClosureEventMonitor(queue: shared) { event in
            dispatchPrecondition(condition: .onQueue(shared))
            seen.names.withLock { $0.append("a\(event.context.connectionID)") }
        }
        let second = ClosureEventMonitor(queue: shared) { event in
            seen.names.withLock { $0.append("b\(event.context.connectionID)") }
        }
        let summariesOnly = ClosureEventMonitor(queue: shared, interest: .summaries) { event in
            seen.names.withLock { $0.append("s\(event.context.connectionID)") }
        }
        let composite = CompositeEventMonitor(monitors: [first, second, summariesOnly])
        for n in 0..<3 { composite.post(event(UInt64(n))) }
        composite.flush()
        #expect(seen.names.withLock { $0 } == ["a0", "b0", "a1", "b1", "a2", "b2"])

        let gate = DispatchSemaphore(value: 0)
        shared.async { gate.wait() }
        let bounded = CompositeEventMonitor(monitors: [first, second, summariesOnly], mailboxLimit: 4)
        for n in 0..<10 { bounded.post(event(UInt64(n))) }
        #expect(bounded.droppedEventCount == 12)  // six events, each lost by two monitors
        gate.signal()
        bounded.flush()
    }

    /// A mailbox holds at most eight monitors (their interests share one 64-bit word): the
    /// ninth and tenth on the same queue get a mailbox of their own, and every one of the ten
    /// still sees every event once, in order; an interest change reaches the one it names.
    @Test func moreThanEightMonitorsOnOneQueueEachSeeEveryEvent() {
        let shared = DispatchQueue(label: "shared-ten")
        let seen = (0..<10).map { _ in Recorder() }
        let monitors = (0..<10).map { index in
            ClosureEventMonitor(queue: shared) { event in
                dispatchPrecondition(condition: .onQueue(shared))
                seen[index].names.withLock { $0.append(event.context.connectionID.description) }
            }
        }
        let switching = SwitchingMonitor(queue: shared)
        let composite = CompositeEventMonitor(monitors: monitors + [switching])
        for n in 0..<100 { composite.post(event(UInt64(n))) }
        switching.verbose.store(true, ordering: .relaxed)
        composite.updateInterest(of: switching)
        composite.post(event(100))
        composite.flush()
        let expected = (0...100).map(String.init)
        for recorder in seen { #expect(recorder.names.withLock { $0 } == expected) }
        #expect(switching.seen.names.withLock { $0 } == ["task.didCreateTask"])
        #expect(composite.droppedEventCount == 0)
    }

    /// A monitor sharing its queue changes its interest without changing its neighbours'.
    @Test func aMonitorOnASharedQueueCanChangeItsInterest() {
        let monitor = SwitchingMonitor()
        let neighbour = Recorder()
        let composite = CompositeEventMonitor(monitors: [monitor, ClosureEventMonitor(queue: monitor.queue) { event in
            neighbour.names.withLock { $0.append(event.name) }
        }])
        composite.post(event(1))
        monitor.verbose.store(true, ordering: .relaxed)
        composite.updateInterest(of: monitor)
        composite.post(event(2))
        composite.flush()
        #expect(monitor.seen.names.withLock { $0 } == ["task.didCreateTask"])
        #expect(neighbour.names.withLock { $0 } == ["task.didCreateTask", "task.didCreateTask"])
    }

    @Test func aStalledMonitorIsBoundedAndCountedWithoutBlocking() {
        let stalledQueue = DispatchQueue(label: "stalled")
        let gate = DispatchSemaphore(value: 0)
        stalledQueue.async { gate.wait() }
        let seen = Recorder()
        let monitor = ClosureEventMonitor(queue: stalledQueue) { event in
            seen.names.withLock { $0.append(event.name) }
        }
        let composite = CompositeEventMonitor(monitors: [monitor], mailboxLimit: 100)
        for n in 0..<250 { composite.post(event(UInt64(n))) }  // returns although the monitor is stuck
        #expect(composite.droppedEventCount == 150)
        gate.signal()
        composite.flush()
        #expect(seen.names.withLock { $0.count } == 100)
    }

    @Test func lifecycleEventsAreNotBuiltForSummaryOnlyMonitors() {
        let monitor = ClosureEventMonitor(interest: .summaries)
        let composite = CompositeEventMonitor(monitors: [monitor])
        #expect(composite.wants(.summaries))
        #expect(!composite.wants(.lifecycle))
        let verbose = CompositeEventMonitor(monitors: [monitor, ClosureEventMonitor(interest: .all)])
        #expect(verbose.wants(.lifecycle))
    }

    /// A monitor whose interest changes at run time (the live stream while a verbose client watches).
    private final class SwitchingMonitor: EventMonitor, @unchecked Sendable {  // `composite` set once at join
        let queue: DispatchQueue
        let verbose = Atomic(false)
        let seen = Recorder()
        var composite: CompositeEventMonitor?
        var interest: EventInterest { verbose.load(ordering: .relaxed) ? .all : .summaries }
        func receive(_ event: LookoutEvent) { seen.names.withLock { $0.append(event.name) } }
        func didJoin(_ composite: CompositeEventMonitor) { self.composite = composite }
        init(queue: DispatchQueue = DispatchQueue(label: "switching")) { self.queue = queue }
    }

    @Test func aMonitorCanChangeItsInterest() {
        let monitor = SwitchingMonitor()
        let composite = CompositeEventMonitor(monitors: [monitor, ClosureEventMonitor(interest: .summaries)])
        #expect(monitor.composite === composite)
        #expect(!composite.wants(.lifecycle))
        composite.post(event(1))
        monitor.verbose.store(true, ordering: .relaxed)
        composite.updateInterest(of: monitor)
        #expect(composite.wants(.lifecycle))
        composite.post(event(2))
        monitor.verbose.store(false, ordering: .relaxed)
        composite.updateInterest(of: monitor)
        #expect(!composite.wants(.lifecycle))
        composite.post(event(3))
        composite.flush()
        // Only the event posted while it asked for lifecycle events reached it.
        #expect(monitor.seen.names.withLock { $0 } == ["task.didCreateTask"])
    }

    /// The handled batch waits for the next post, which releases it on the posting thread (where
    /// the events were allocated; see `Mailbox.handBack`).
    @Test func theNextPostReleasesTheHandledBatchOnItsOwnThread() {
        let record = ReleaseRecord()
        let handled = DispatchSemaphore(value: 0)
        let monitor = ClosureEventMonitor(queue: DispatchQueue(label: "handled")) { _ in handled.signal() }
        let composite = CompositeEventMonitor(monitors: [monitor])
        composite.post(LookoutEvent(EventContext(connectionID: 1), ProbedEvent(probe: ReleaseProbe(record))))
        handled.wait()
        composite.flush()
        #expect(record.releasedOn == nil)  // kept for the next post
        composite.post(event(2))
        let poster = pthread_self()
        #expect(record.releasedOn.map { pthread_equal($0, poster) != 0 } == true)
        handled.wait()
        composite.flush()
    }

    /// When nothing is posted for the hand-back window, the monitor's queue releases the batch.
    @Test func aHandledBatchNobodyClaimsIsReleasedAfterTheWindow() async throws {
        let record = ReleaseRecord()
        let composite = CompositeEventMonitor(monitors: [ClosureEventMonitor { _ in }])
        composite.post(LookoutEvent(EventContext(connectionID: 1), ProbedEvent(probe: ReleaseProbe(record))))
        composite.flush()
        #expect(record.releasedOn == nil)
        let deadline = ContinuousClock.now + .seconds(5)
        while record.releasedOn == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(record.releasedOn != nil)
    }
}
