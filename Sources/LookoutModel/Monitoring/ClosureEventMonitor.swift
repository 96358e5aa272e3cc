import Dispatch

/// An `EventMonitor` that hands every event to a closure: for tests and for embedding Lookout.
public final class ClosureEventMonitor: EventMonitor, @unchecked Sendable {  // `onEvent` is set before use, then read on `queue`
    public let queue: DispatchQueue
    public let interest: EventInterest
    /// Called on `queue` for every delivered event.
    public var onEvent: (@Sendable (LookoutEvent) -> Void)?

    public init(queue: DispatchQueue = DispatchQueue(label: "lookout.monitor.closure"),
                interest: EventInterest = .all, onEvent: (@Sendable (LookoutEvent) -> Void)? = nil) {
        self.queue = queue
        self.interest = interest
        self.onEvent = onEvent
    }

    public func receive(_ event: LookoutEvent) {
        onEvent?(event)
    }
}
