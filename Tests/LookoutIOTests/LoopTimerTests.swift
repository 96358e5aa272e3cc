import Dispatch
import Testing
@testable import LookoutIO

/// `LoopTimer` on a real loop: its handlers fire once, on the loop, no earlier than asked, and a
/// re-arm or a cancel replaces what was armed.
@Suite(.serialized) struct LoopTimerTests {
    private let group = EventLoopGroup(count: 1)
    private var loop: EventLoop { group.loops[0] }

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

    @Test func theStandingHandlerFiresOnceAfterItsTime() async {
        let log = Log()
        let (timer, armedAt): (LoopTimer, UInt64) = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setStandingHandler { log.fired.append("standing"); log.firedAt.append(DispatchTime.now().uptimeNanoseconds) }
            timer.schedule(after: 0.1)
            return (timer, DispatchTime.now().uptimeNanoseconds)
        }
        #expect(onLoop { timer.isArmed })
        await settle(after: 0.1)
        #expect(onLoop { log.fired } == ["standing"])
        #expect(onLoop { log.firedAt[0] } >= armedAt + 100_000_000, "never before its time")
        #expect(onLoop { !timer.isArmed })
        await settle(after: 0)
        #expect(onLoop { log.fired.count } == 1, "once")
    }

    @Test func reArmingTheStandingHandlerPushesItBack() async {
        let log = Log()
        let timer: LoopTimer = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setStandingHandler { log.fired.append("standing") }
            timer.schedule(after: 0.1)
            return timer
        }
        for _ in 0..<4 {
            try? await Task.sleep(nanoseconds: 50_000_000)
            onLoop { timer.schedule(after: 0.2) }
        }
        #expect(onLoop { log.fired }.isEmpty, "each re-arm moved the deadline")
        await settle(after: 0.2)
        #expect(onLoop { log.fired } == ["standing"])
    }

    @Test func aCancelledTimerNeverFires() async {
        let log = Log()
        let timer: LoopTimer = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setStandingHandler { log.fired.append("standing") }
            timer.schedule(after: 0.05)
            timer.cancel()
            return timer
        }
        #expect(onLoop { !timer.isArmed })
        await settle(after: 0.05)
        #expect(onLoop { log.fired }.isEmpty)
    }

    @Test func eachScheduleReplacesTheOtherKindOfHandler() async {
        let log = Log()
        let timer: LoopTimer = onLoop {
            let timer = LoopTimer(loop: loop)
            timer.setStandingHandler { log.fired.append("standing") }
            timer.schedule(after: 0.05) { log.fired.append("one-off") }
            timer.schedule(after: 0.05)
            return timer
        }
        await settle(after: 0.05)
        #expect(onLoop { log.fired } == ["standing"], "the standing arm replaced the one-off handler")
        onLoop {
            timer.schedule(after: 0.05)
            timer.schedule(after: 0.05) { log.fired.append("one-off") }
        }
        await settle(after: 0.05)
        #expect(onLoop { log.fired } == ["standing", "one-off"], "the one-off handler replaced the standing arm")
    }
}
