/// One breakpoint as written in `breakpoints.rules` or posted to `POST /breakpoints`.
public struct BreakpointRuleSpec: Sendable, Equatable {
    /// An expression of `lookout log`'s filter language, matched against the exchange on its way.
    public var filter: String
    /// Pause before the request goes upstream, before the response reaches the client, or both.
    public var onRequest: Bool
    public var onResponse: Bool
    /// Seconds held before `onTimeout` applies.
    public var timeout: Double
    public var onTimeout: TimeoutAction

    public enum TimeoutAction: String, Sendable, Equatable {
        /// The exchange goes on unchanged.
        case `continue`
        /// The client gets `502 breakpoint_timeout`.
        case abort
    }

    public static let defaultTimeout = 300.0

    public init(filter: String, onRequest: Bool = true, onResponse: Bool = false, timeout: Double = defaultTimeout,
                onTimeout: TimeoutAction = .continue) {
        self.filter = filter
        self.onRequest = onRequest
        self.onResponse = onResponse
        self.timeout = timeout
        self.onTimeout = onTimeout
    }

    /// The `on` list as written: "request", "response".
    public var phases: [String] {
        (onRequest ? ["request"] : []) + (onResponse ? ["response"] : [])
    }
}

/// The `breakpoints` section: the bounds and the rules a session starts with.
public struct BreakpointSettings: Sendable, Equatable {
    /// More exchanges held at once: the newest goes on unpaused (`exchange.didNotPause`).
    public var maxHeld: Int
    /// Body bytes held with a paused head; a longer body pauses on its head only.
    public var maxBodyBytes: Int
    public var rules: [BreakpointRuleSpec]

    public static let defaultMaxHeld = 100
    public static let defaultMaxBodyBytes = 1 << 20

    public init(maxHeld: Int = defaultMaxHeld, maxBodyBytes: Int = defaultMaxBodyBytes, rules: [BreakpointRuleSpec] = []) {
        self.maxHeld = maxHeld
        self.maxBodyBytes = maxBodyBytes
        self.rules = rules
    }
}

/// What became of an operator's action on a held exchange.
public enum OperatorOutcome: Sendable, Equatable {
    case done
    /// No exchange with that id is held now (it was never held, went on, or ended).
    case notHeld
    /// An edit cannot be applied (the message names the field); the exchange stays held.
    case invalid(String)
}
