import Dispatch

/// Sees the whole life of every exchange. `receive` is called on the monitor's own `queue`, never on
/// an event loop, so a slow monitor cannot stall traffic. A monitor picks the kinds it cares about
/// with `event.kind(_:)` (`if let retry = event.kind(RequestIsRetrying.self) { … }`), or from the
/// existential `event.kind`.
public protocol EventMonitor: AnyObject, Sendable {
    /// Where `receive` runs.
    var queue: DispatchQueue { get }
    /// Which events to deliver. Default: all.
    var interest: EventInterest { get }
    /// Receives every event of `interest`, in the order they were posted.
    func receive(_ event: LookoutEvent)
    /// Called once when the monitor is added to `composite`: a monitor whose interest changes
    /// keeps it, to call `composite.updateInterest(of: self)`.
    func didJoin(_ composite: CompositeEventMonitor)
}

extension EventMonitor {
    public var interest: EventInterest { .all }
    public func didJoin(_ composite: CompositeEventMonitor) {}
}
