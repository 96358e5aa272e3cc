import Dispatch

/// A re-armable one-shot timer on an event loop, for timeouts that are reset often
/// (idle keep-alive, first byte, header read, pool expiry).
///
/// Rescheduling a Dispatch timer costs system calls, and a proxy resets its timeouts several times
/// per request. So this timer only records the new deadline; the Dispatch timer is re-armed only
/// when the deadline moves earlier than what it is already set for. When it fires early (the
/// deadline was pushed back meanwhile) it re-arms for the real deadline; when it fires after a
/// cancel it does nothing.
public final class LoopTimer: @unchecked Sendable {  // confined to `loop.queue`
    private let loop: EventLoop
    private let source: DispatchSourceTimer
    private var handler: (() -> Void)?
    private var deadline: UInt64?
    private var armedFor: UInt64?
    private static let leeway: UInt64 = 5_000_000

    public init(loop: EventLoop) {
        self.loop = loop
        source = DispatchSource.makeTimerSource(queue: loop.queue)
        // Weak: an armed Dispatch source outlives its owner unless cancelled, and must never
        // call into a released timer.
        source.setEventHandler { [weak self] in self?.fire() }
        source.schedule(deadline: .distantFuture)
        source.activate()
    }

    /// True while a handler is waiting to run.
    public var isArmed: Bool { handler != nil }

    /// Calls `handler` once, `seconds` from now, replacing any earlier schedule.
    public func schedule(after seconds: Double, _ handler: @escaping () -> Void) {
        loop.assertOnLoop()
        self.handler = handler
        let when = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        deadline = when
        if let armedFor, armedFor <= when { return }
        arm(when)
    }

    /// Disarms the timer (it can be scheduled again).
    public func cancel() {
        handler = nil
        deadline = nil
    }

    /// Stops the timer for good (also done when the timer is released).
    public func invalidate() {
        cancel()
        source.cancel()
    }

    deinit {
        source.cancel()
    }

    private func arm(_ when: UInt64) {
        armedFor = when
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: when), leeway: .milliseconds(5))
    }

    private func fire() {
        armedFor = nil
        guard let deadline, let handler else { return }
        if DispatchTime.now().uptimeNanoseconds + LoopTimer.leeway < deadline {
            arm(deadline)
            return
        }
        self.handler = nil
        self.deadline = nil
        loop.runBatch(handler)
    }
}
