import Dispatch
import Testing
@testable import LookoutIO

/// `LoopTimer` on a real loop: its handlers fire once, on the loop, no earlier than asked, and a
/// re-arm or a cancel replaces what was armed.
@Suite(.serialized) struct LoopTimerTests {
    private let group = EventLoopGroup(count: 1)
    private var loop: EventLoop { group.loops[0] }

    /// A timer's owner that runs `body` when the timer fires; the test holds it (a timer holds
    /// its owner unowned).
    private final class Owner: LoopTimerOwner, @unchecked Sendable {  // called on the test loop's queue only
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
        func loopTimerFired() { body() }
    }

    /// Counts what fired, read and written on the loop only.
    private final class Log: @unchecked Sendable {  // touched on the test loop's queue only
        var fired: [String] = []
        var firedAt: [UInt64] = []
    }

    private func onLoop<T>(_ body: @escaping () -> T) -> T {
        nonisolated(unsafe) var result: T?
        let loop = self.loop
        loop.queue.sync { loop.runBatch { result = body() } }
        return result!
    }

    /// Waits long enough for a timer due in `seconds` to have fired (the loop checks every tick).
    private func settle(after seconds: Double) async {
        let ticks = EventLoop.timerTick
        guard case .milliseconds(let tick) = ticks else { preconditionFailure() }
        try? await Task.sleep(nanoseconds: UInt64((seconds * 1000 + Double(tick) * 3) * 1_000_000))
    }

    /// Waits until `condition` holds on the loop, for at most five seconds (a slow machine).
    private func waitUntil(_ condition: @escaping () -> Bool) async -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            if onLoop(condition) { return true }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return onLoop(condition)
    }

    @Test func theOwnerIsCalledOnceAfterItsTime() async {
        let log = Log()
        let owner = Owner { log.fired.append("standing"); log.firedAt.append(DispatchTime.now().uptimeNanoseconds) }
        let (timer, armedAt): (LoopTimer, UInt64) = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setOwner(owner)
            let armedAt = DispatchTime.now().uptimeNanoseconds
            timer.schedule(after: 0.1)
            return (timer, armedAt)
        }
        #expect(onLoop { timer.isArmed })
        #expect(await waitUntil { !log.fired.isEmpty })
        #expect(onLoop { log.fired } == ["standing"])
        #expect(onLoop { log.firedAt[0] } >= armedAt + 100_000_000, "never before its time")
        #expect(onLoop { !timer.isArmed })
        await settle(after: 0)
        #expect(onLoop { log.fired.count } == 1, "once")
        withExtendedLifetime(owner) {}
    }

    /// Each firing comes at least `delay` after the arm before it (a re-arm that came in time
    /// pushed the deadline back), and never more than once per arm. Checked from the order of
    /// events on the loop, so a slow machine (sanitizers) cannot make it fail falsely.
    @Test func reArmingForTheOwnerPushesItBack() async {
        let log = Log()
        let owner = Owner { log.fired.append("fire"); log.firedAt.append(DispatchTime.now().uptimeNanoseconds) }
        let delay = 0.2
        let timer: LoopTimer = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setOwner(owner)
            log.fired.append("arm"); log.firedAt.append(DispatchTime.now().uptimeNanoseconds)
            timer.schedule(after: delay)
            return timer
        }
        for _ in 0..<4 {
            try? await Task.sleep(nanoseconds: 50_000_000)
            onLoop {
                log.fired.append("arm"); log.firedAt.append(DispatchTime.now().uptimeNanoseconds)
                timer.schedule(after: delay)
            }
        }
        await settle(after: delay)
        #expect(await waitUntil { log.fired.last == "fire" })
        let (events, times) = onLoop { (log.fired, log.firedAt) }
        #expect(events.last == "fire", "the last arm fired")
        var lastArm: UInt64 = 0
        var firesSinceArm = 0
        for (event, time) in zip(events, times) {
            if event == "arm" {
                lastArm = time
                firesSinceArm = 0
            } else {
                #expect(time >= lastArm + UInt64(delay * 1e9), "fired before the deadline its last arm set")
                firesSinceArm += 1
                #expect(firesSinceArm == 1, "one firing per arm")
            }
        }
        withExtendedLifetime(owner) {}
    }

    @Test func aCancelledTimerNeverFires() async {
        let log = Log()
        let owner = Owner { log.fired.append("standing") }
        let timer: LoopTimer = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setOwner(owner)
            timer.schedule(after: 0.05)
            timer.cancel()
            return timer
        }
        #expect(onLoop { !timer.isArmed })
        await settle(after: 0.05)
        #expect(onLoop { log.fired }.isEmpty)
        withExtendedLifetime(owner) {}
    }

    @Test func eachScheduleReplacesTheOtherKindOfHandler() async {
        let log = Log()
        let owner = Owner { log.fired.append("standing") }
        let timer: LoopTimer = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setOwner(owner)
            timer.schedule(after: 0.05) { log.fired.append("one-off") }
            timer.schedule(after: 0.05)
            return timer
        }
        #expect(await waitUntil { !log.fired.isEmpty && !timer.isArmed })
        await settle(after: 0)
        #expect(onLoop { log.fired } == ["standing"], "the owner's arm replaced the one-off handler")
        onLoop {
            timer.schedule(after: 0.05)
            timer.schedule(after: 0.05) { log.fired.append("one-off") }
        }
        #expect(await waitUntil { log.fired.count >= 2 && !timer.isArmed })
        await settle(after: 0)
        #expect(onLoop { log.fired } == ["standing", "one-off"], "the one-off handler replaced the owner's arm")
        withExtendedLifetime(owner) {}
    }
}
