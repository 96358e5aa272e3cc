import Dispatch

/// A re-armable one-shot timer on an event loop, for the timeouts a proxy resets all the time
/// (idle keep-alive, header read, first byte, linger, pool expiry).
///
/// It is a deadline in the loop's timer list, not a Dispatch timer of its own: creating,
/// re-arming and cancelling a Dispatch source each cost a round trip through Dispatch's manager
/// thread, several per connection. The loop checks its list every `EventLoop.timerTick`, so a
/// timer fires up to one tick late.
public final class LoopTimer: @unchecked Sendable {  // confined to `loop.queue`
    private unowned let loop: EventLoop
    /// A one-off schedule's handler.
    private var handler: (() -> Void)?
    /// Whom `schedule(after:)` calls: the timer's owner, held unowned (it owns the timer). Not a
    /// closure: a closure capturing the owner is an allocation of its own, and every idle client
    /// connection holds its timer.
    private unowned var owner: (any LoopTimerOwner)?
    private var ownerArmed = false
    /// Monotonic nanoseconds.
    private(set) var deadline: UInt64 = 0
    /// Position in the loop's list, or -1 when not armed.
    var slot = -1

    public init(loop: EventLoop) {
        self.loop = loop
    }

    /// True while a handler is waiting to run.
    public var isArmed: Bool { handler != nil || ownerArmed }

    /// Calls `handler` once, about `seconds` from now, replacing any earlier schedule.
    public func schedule(after seconds: Double, _ handler: @escaping () -> Void) {
        loop.assertOnLoop()
        self.handler = handler
        ownerArmed = false
        arm(seconds)
    }

    /// Sets whom `schedule(after:)` calls. For timers re-armed on every request (idle, first
    /// byte): re-arming then allocates nothing.
    public func setOwner(_ owner: any LoopTimerOwner) {
        self.owner = owner
    }

    /// Calls the owner's `loopTimerFired()` once, about `seconds` from now, replacing any earlier
    /// schedule.
    public func schedule(after seconds: Double) {
        loop.assertOnLoop()
        precondition(owner != nil, "schedule(after:) needs setOwner first")
        handler = nil
        ownerArmed = true
        arm(seconds)
    }

    private func arm(_ seconds: Double) {
        deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        if slot < 0 { loop.register(self) }
    }

    /// Disarms the timer (it can be scheduled again).
    public func cancel() {
        handler = nil
        ownerArmed = false
        if slot >= 0 { loop.unregister(self) }
    }

    /// Stops the timer for good (also done when the timer is released).
    public func invalidate() {
        cancel()
    }

    /// Called by the loop once the deadline has passed; the timer is already out of the list.
    func fire() {
        if ownerArmed {
            ownerArmed = false
            owner?.loopTimerFired()
            return
        }
        guard let handler else { return }
        self.handler = nil
        handler()
    }

    deinit {
        if slot >= 0 { loop.unregister(self) }
    }
}

/// The owner of a re-armed timer (`LoopTimer.setOwner`), called on the timer's loop.
public protocol LoopTimerOwner: AnyObject {
    func loopTimerFired()
}
