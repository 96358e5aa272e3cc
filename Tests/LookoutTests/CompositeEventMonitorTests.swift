import Dispatch
import Synchronization
import Testing
@testable import Lookout

private final class Recorder: @unchecked Sendable {
    let names = Mutex<[String]>([])
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
        let queue = DispatchQueue(label: "switching")
        let verbose = Atomic(false)
        let seen = Recorder()
        var composite: CompositeEventMonitor?
        var interest: EventInterest { verbose.load(ordering: .relaxed) ? .all : .summaries }
        func receive(_ event: LookoutEvent) { seen.names.withLock { $0.append(event.name) } }
        func didJoin(_ composite: CompositeEventMonitor) { self.composite = composite }
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
}
