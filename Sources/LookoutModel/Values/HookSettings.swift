/// One external hook (`hooks[i]`): a long-running command or an HTTP endpoint that sees the
/// exchanges its filter matches and may change, answer or abort them.
public struct HookSettings: Sendable, Equatable {
    public enum Transport: Sendable, Equatable {
        /// Started once and kept: one JSON object per line on its stdin, one reply per line on its stdout.
        case command([String], workingDirectory: String)
        /// Each call is a POST of the same JSON; the reply is the response's body.
        case url(String)
    }

    public enum FailureAction: String, Sendable, Equatable {
        /// The exchange goes on as if the hook had answered `continue` (fail open).
        case `continue`
        /// The client gets `502 hook_failed`.
        case abort
    }

    public var name: String
    /// An expression of `lookout log`'s filter language; empty matches every exchange.
    public var filter: String
    public var onRequest: Bool
    public var onResponse: Bool
    public var transport: Transport
    /// How long one call may take.
    public var timeoutMilliseconds: Int
    /// Bodies up to this size are sent (and may be replaced); a longer one is sent as its head
    /// with `"body_truncated": true`.
    public var maxBodyBytes: Int
    public var onFailure: FailureAction
    /// Calls in flight to this hook at once.
    public var concurrency: Int
    /// Calls waiting for a place beyond `concurrency`; more fail at once (`on_failure`).
    public var queueLimit: Int

    public static let defaultTimeoutMilliseconds = 500
    public static let defaultMaxBodyBytes = 1 << 20
    public static let defaultConcurrency = 8
    public static let defaultQueueLimit = 64

    public init(name: String, filter: String = "", onRequest: Bool = true, onResponse: Bool = false, transport: Transport,
                timeoutMilliseconds: Int = defaultTimeoutMilliseconds, maxBodyBytes: Int = defaultMaxBodyBytes,
                onFailure: FailureAction = .continue, concurrency: Int = defaultConcurrency,
                queueLimit: Int = defaultQueueLimit) {
        self.name = name
        self.filter = filter
        self.onRequest = onRequest
        self.onResponse = onResponse
        self.transport = transport
        self.timeoutMilliseconds = timeoutMilliseconds
        self.maxBodyBytes = maxBodyBytes
        self.onFailure = onFailure
        self.concurrency = concurrency
        self.queueLimit = queueLimit
    }

    /// The most a reply may hold: an edited body of `maxBodyBytes` as base64, and room for the rest.
    public var maxReplyBytes: Int { maxBodyBytes / 3 * 4 + 4 + (64 << 10) }
}
