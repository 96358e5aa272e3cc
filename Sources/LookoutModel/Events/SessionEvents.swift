/// `session.didStart`: listening.
public struct SessionDidStart: EventKind {
    public static let name = "session.didStart"
    public static let interest = EventInterest.summaries
    public var listeners: [String]

    public init(listeners: [String]) {
        self.listeners = listeners
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("listeners", listeners)
    }
}

/// `session.willInvalidate`: shutdown began, with the exchanges still running.
public struct SessionWillInvalidate: EventKind {
    public static let name = "session.willInvalidate"
    public static let interest = EventInterest.summaries
    public var inFlight: Int

    public init(inFlight: Int) {
        self.inFlight = inFlight
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("in_flight", inFlight)
    }
}

/// `session.didBecomeInvalid`: the last record, with the events monitors could not take.
public struct SessionDidBecomeInvalid: EventKind {
    public static let name = "session.didBecomeInvalid"
    public static let interest = EventInterest.summaries
    public var droppedEvents: UInt64

    public init(droppedEvents: UInt64) {
        self.droppedEvents = droppedEvents
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("dropped_events", droppedEvents)
    }
}

/// `session.reachabilityDidChange`: the route to the outside appeared, went, or moved to another
/// interface (`reachability.enabled`).
public struct SessionReachabilityDidChange: EventKind {
    public static let name = "session.reachabilityDidChange"
    public static let interest = EventInterest.summaries
    /// "unknown", "not_reachable", "reachable_via_ethernet", …
    public var old: String
    public var new: String
    /// The default route's interface, when there is one.
    public var interface: String?

    public init(old: String, new: String, interface: String? = nil) {
        self.old = old
        self.new = new
        self.interface = interface
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("old", old)
        writer.field("new", new)
        if let interface { writer.field("interface", interface) }
    }
}

/// `session.configDidReload`: the configuration file was read again and applied: which top-level
/// sections changed, which of those took effect now, which wait for a restart, and the new
/// file's SHA-256.
public struct SessionDidReloadConfig: EventKind {
    public static let name = "session.configDidReload"
    public static let interest = EventInterest.summaries
    /// `SIGHUP`, `admin` (`POST /admin/reload`) or `watch` (`config_watch`).
    public var trigger: String
    public var changed: [String]
    public var reloaded: [String]
    public var restartNeeded: [String]
    public var hash: String

    public init(trigger: String, changed: [String], reloaded: [String], restartNeeded: [String], hash: String) {
        self.trigger = trigger
        self.changed = changed
        self.reloaded = reloaded
        self.restartNeeded = restartNeeded
        self.hash = hash
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("trigger", trigger)
        writer.field("changed", changed)
        writer.field("reloaded", reloaded)
        writer.field("restart_needed", restartNeeded)
        writer.field("hash", hash)
    }
}

/// `session.configDidFailToReload`: the file could not be used; the running configuration stays,
/// whole. `error` names the file, line, column and key.
public struct SessionDidFailToReloadConfig: EventKind {
    public static let name = "session.configDidFailToReload"
    public static let interest = EventInterest.summaries
    public var trigger: String
    public var error: String

    public init(trigger: String, error: String) {
        self.trigger = trigger
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("trigger", trigger)
        writer.field("error", error)
    }
}
