import HTTPTypes

/// `task.didCreateTask`: an upstream attempt begins.
public struct TaskDidCreate: EventKind {
    public static let name = "task.didCreateTask"
    public var origin: String
    public var attempt: Int

    public init(origin: String, attempt: Int) {
        self.origin = origin
        self.attempt = attempt
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("origin", origin)
        writer.field("attempt", attempt)
    }
}

/// `task.didResolve`: DNS answered.
public struct TaskDidResolve: EventKind {
    public static let name = "task.didResolve"
    public var host: String
    public var addresses: [String]
    public var milliseconds: Double
    public var cached: Bool

    public init(host: String, addresses: [String], milliseconds: Double, cached: Bool) {
        self.host = host
        self.addresses = addresses
        self.milliseconds = milliseconds
        self.cached = cached
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("host", host)
        writer.field("addresses", addresses)
        writer.field("ms", milliseconds: milliseconds)
        writer.field("cached", cached)
    }
}

/// `task.didConnect`: a new TCP connection to the origin.
public struct TaskDidConnect: EventKind {
    public static let name = "task.didConnect"
    public var address: String
    public var milliseconds: Double

    public init(address: String, milliseconds: Double) {
        self.address = address
        self.milliseconds = milliseconds
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("address", address)
        writer.field("ms", milliseconds: milliseconds)
    }
}

/// `task.didReuseConnection`: a pooled connection serves the attempt.
public struct TaskDidReuseConnection: EventKind {
    public static let name = "task.didReuseConnection"
    public var address: String
    public var upstreamConnectionID: UInt64

    public init(address: String, upstreamConnectionID: UInt64) {
        self.address = address
        self.upstreamConnectionID = upstreamConnectionID
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("address", address)
        writer.field("upstream_conn", upstreamConnectionID)
    }
}

/// `task.didReceiveChallenge`: the origin's chain is about to be judged by a trust rule.
public struct TaskDidReceiveChallenge: EventKind {
    public static let name = "task.didReceiveChallenge"
    public var host: String
    public var rule: String
    public var evaluator: String

    public init(host: String, rule: String, evaluator: String) {
        self.host = host
        self.rule = rule
        self.evaluator = evaluator
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("host", host)
        writer.field("rule", rule)
        writer.field("evaluator", evaluator)
    }
}

/// `task.didEvaluateServerTrust`: what the trust rule decided.
public struct TaskDidEvaluateServerTrust: EventKind {
    public static let name = "task.didEvaluateServerTrust"
    public var decision: TrustDecision

    public init(decision: TrustDecision) {
        self.decision = decision
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("host", decision.host)
        writer.trustFields(decision)
        writer.field("enforced", decision.enforced)
    }
}

/// `task.didSendBodyData`: request body bytes went upstream.
public struct TaskDidSendBodyData: EventKind {
    public static let name = "task.didSendBodyData"
    public var bytesSent: Int
    public var totalBytesSent: UInt64

    public init(bytesSent: Int, totalBytesSent: UInt64) {
        self.bytesSent = bytesSent
        self.totalBytesSent = totalBytesSent
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("bytes_sent", bytesSent)
        writer.field("total_bytes_sent", totalBytesSent)
    }
}

/// `task.didReceiveResponse`: a response head (final or informational) from the origin.
public struct TaskDidReceiveResponse: EventKind {
    public static let name = "task.didReceiveResponse"
    public var status: Int
    public var reasonPhrase: String
    public var headerFields: HTTPFields

    public init(status: Int, reasonPhrase: String, headerFields: HTTPFields) {
        self.status = status
        self.reasonPhrase = reasonPhrase
        self.headerFields = headerFields
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("status", status)
        writer.field("reason", reasonPhrase)
        writer.field("headers", headers: headerFields)
    }
}

/// `task.willPerformRedirect`: what the redirect policy decided about a 3xx with a `Location`.
public struct TaskWillPerformRedirect: EventKind {
    public static let name = "task.willPerformRedirect"
    /// The URL that answered with the redirect.
    public var from: String
    /// The resolved `Location`, after any rewrite.
    public var to: String
    public var status: Int
    /// `follow`, `pass` or `refuse`.
    public var decision: String
    /// Why, e.g. `rule`, `no_rule`, `cross_host`, `downgrade`, `body_not_replayable`, `loop`, `limit`.
    public var reason: String

    public init(from: String, to: String, status: Int, decision: String, reason: String) {
        self.from = from
        self.to = to
        self.status = status
        self.decision = decision
        self.reason = reason
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("from", url: from)
        writer.field("to", url: to)
        writer.field("status", status)
        writer.field("decision", decision)
        writer.field("reason", reason)
    }
}

/// `task.didReceiveData`: response body bytes arrived (and were relayed or held back).
public struct TaskDidReceiveData: EventKind {
    public static let name = "task.didReceiveData"
    public var bytes: Int
    public var totalBytes: UInt64

    public init(bytes: Int, totalBytes: UInt64) {
        self.bytes = bytes
        self.totalBytes = totalBytes
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("bytes", bytes)
        writer.field("total_bytes", totalBytes)
    }
}

/// `task.didSuspend`: the client is backed up, so reading from the origin pauses.
public struct TaskDidSuspend: EventKind {
    public init() {}
    public static let name = "task.didSuspend"
    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {}
}

/// `task.didResume`: the client drained; reading from the origin resumes.
public struct TaskDidResume: EventKind {
    public init() {}
    public static let name = "task.didResume"
    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {}
}

/// `task.willCacheResponse`: what the cache policy decided for a response.
public struct TaskWillCacheResponse: EventKind {
    public static let name = "task.willCacheResponse"
    /// True when the response is being stored; a later record with false follows if storing fails.
    public var stored: Bool
    /// Why not (e.g. "private", "too_large", "no_freshness", "write_failed"), or nil.
    public var reason: String?
    /// The `cache.rules` host pattern that decided, if one did.
    public var rule: String?

    public init(stored: Bool, reason: String? = nil, rule: String? = nil) {
        self.stored = stored
        self.reason = reason
        self.rule = rule
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("stored", stored)
        if let reason { writer.field("reason", reason) }
        if let rule { writer.field("rule", rule) }
    }
}

/// `task.didGatherMetrics`: the exchange's transactions so far, this attempt last.
public struct TaskDidGatherMetrics: EventKind {
    public static let name = "task.didGatherMetrics"
    public var metrics: TaskMetrics

    public init(metrics: TaskMetrics) {
        self.metrics = metrics
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("metrics", metrics)
    }
}

/// `task.didComplete`: the attempt is over, with its error if it failed.
public struct TaskDidComplete: EventKind {
    public static let name = "task.didComplete"
    public var error: ProxyError?

    public init(error: ProxyError? = nil) {
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        if let error { writer.field("error", error) }
    }
}
