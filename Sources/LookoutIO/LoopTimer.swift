import Dispatch

/// A re-armable one-shot timer on an event loop, for timeouts that are reset often
/// (idle keep-alive, first byte, header read). One Dispatch timer per owner, rescheduled in place.
public final class LoopTimer: @unchecked Sendable {  // confined to `loop.queue`
    private let loop: EventLoop
    private let source: DispatchSourceTimer
    private var handler: (() -> Void)?
    private var generation: UInt64 = 0
    private var firingGeneration: UInt64 = 0
    public private(set) var isArmed = false

    public init(loop: EventLoop) {
        self.loop = loop
        source = DispatchSource.makeTimerSource(queue: loop.queue)
        source.setEventHandler { [unowned self] in fire() }
        source.schedule(deadline: .distantFuture)
        source.activate()
    }

    /// Calls `handler` once, `seconds` from now, replacing any earlier schedule.
    public func schedule(after seconds: Double, _ handler: @escaping () -> Void) {
        loop.assertOnLoop()
        self.handler = handler
        generation &+= 1
        firingGeneration = generation
        isArmed = true
        source.schedule(deadline: .now() + seconds, leeway: .milliseconds(10))
    }

    /// Disarms the timer (it can be scheduled again).
    public func cancel() {
        guard isArmed else { return }
        isArmed = false
        handler = nil
        generation &+= 1
        source.schedule(deadline: .distantFuture)
    }

    /// Stops the timer for good; call before dropping the owner.
    public func invalidate() {
        cancel()
        source.cancel()
    }

    private func fire() {
        // A late event from a schedule that was replaced or cancelled is ignored.
        guard isArmed, firingGeneration == generation, let handler else { return }
        isArmed = false
        self.handler = nil
        loop.runBatch(handler)
    }
}
