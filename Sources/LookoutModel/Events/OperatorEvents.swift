/// `exchange.didPause`: a breakpoint holds the exchange until an operator (or its timeout) lets
/// it go. Written in the default mode too: an exchange someone may edit is never silent.
public struct ExchangeDidPause: EventKind {
    public static let name = "exchange.didPause"
    public static let interest = EventInterest.summaries
    /// "request" or "response".
    public var phase: String
    /// The breakpoint's number and filter (`GET /breakpoints`).
    public var rule: String
    /// Body bytes held with the head, and whether an operator may replace them (false when the
    /// body is larger than `max_body_bytes`: the exchange paused on its head only).
    public var bodyBytes: Int
    public var bodyEditable: Bool
    /// Seconds until `on_timeout` applies, and what it is.
    public var timeout: Double
    public var onTimeout: String

    public init(phase: String, rule: String, bodyBytes: Int, bodyEditable: Bool, timeout: Double, onTimeout: String) {
        self.phase = phase
        self.rule = rule
        self.bodyBytes = bodyBytes
        self.bodyEditable = bodyEditable
        self.timeout = timeout
        self.onTimeout = onTimeout
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("phase", phase)
        writer.field("rule", rule)
        writer.field("body_bytes", bodyBytes)
        writer.field("body_editable", bodyEditable)
        writer.field("timeout_s", number: timeout)
        writer.field("on_timeout", onTimeout)
    }
}

/// `exchange.didNotPause`: a breakpoint matched but the exchange went on unpaused (`max_held`
/// exchanges were held already).
public struct ExchangeDidNotPause: EventKind {
    public static let name = "exchange.didNotPause"
    public static let interest = EventInterest.summaries
    public var phase: String
    public var rule: String
    public var reason: String

    public init(phase: String, rule: String, reason: String) {
        self.phase = phase
        self.rule = rule
        self.reason = reason
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("phase", phase)
        writer.field("rule", rule)
        writer.field("reason", reason)
    }
}

/// `exchange.didResume`: a paused exchange goes on — who let it go, what they did, what changed.
public struct ExchangeDidResume: EventKind {
    public static let name = "exchange.didResume"
    public static let interest = EventInterest.summaries
    public var phase: String
    public var rule: String
    /// The operator's address, or "timeout".
    public var by: String
    /// "continue", "abort" or "answer".
    public var action: String
    /// What the operator changed ("method", "url", "header:x-debug", "body", "status").
    public var changes: [String]
    public var heldMilliseconds: Double

    public init(phase: String, rule: String, by: String, action: String, changes: [String], heldMilliseconds: Double) {
        self.phase = phase
        self.rule = rule
        self.by = by
        self.action = action
        self.changes = changes
        self.heldMilliseconds = heldMilliseconds
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("phase", phase)
        writer.field("rule", rule)
        writer.field("by", by)
        writer.field("action", action)
        writer.field("changes", changes)
        writer.field("held_ms", milliseconds: heldMilliseconds)
    }
}

/// `hook.didRun`: an external hook saw the exchange — how long it took, what it answered, or why
/// it failed.
public struct HookDidRun: EventKind {
    public static let name = "hook.didRun"
    public static let interest = EventInterest.summaries
    public var hook: String
    public var phase: String
    public var milliseconds: Double
    /// "continue", "modify", "answer", "abort", or what `on_failure` made of a failure.
    public var action: String
    public var changes: [String]
    /// Why the call failed (timeout, exit, unusable reply, queue full); nil when it did not.
    public var error: String?

    public init(hook: String, phase: String, milliseconds: Double, action: String, changes: [String], error: String?) {
        self.hook = hook
        self.phase = phase
        self.milliseconds = milliseconds
        self.action = action
        self.changes = changes
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("hook", hook)
        writer.field("phase", phase)
        writer.field("ms", milliseconds: milliseconds)
        writer.field("action", action)
        if !changes.isEmpty { writer.field("changes", changes) }
        if let error { writer.field("error", error) }
    }
}

/// `hook.didRestart`: a command hook's process exited and was started again after a backoff.
public struct HookDidRestart: EventKind {
    public static let name = "hook.didRestart"
    public static let interest = EventInterest.summaries
    public var hook: String
    public var reason: String
    public var backoffMilliseconds: Double

    public init(hook: String, reason: String, backoffMilliseconds: Double) {
        self.hook = hook
        self.reason = reason
        self.backoffMilliseconds = backoffMilliseconds
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("hook", hook)
        writer.field("reason", reason)
        writer.field("backoff_ms", milliseconds: backoffMilliseconds)
    }
}
