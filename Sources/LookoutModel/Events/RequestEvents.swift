import HTTPTypes
import Synchronization

/// `request.didCreateInitialRequest`: a request head arrived, as the client sent it.
public struct RequestDidCreateInitialRequest: EventKind {
    public static let name = "request.didCreateInitialRequest"
    public var method: String
    public var url: String
    public var httpVersion: String
    public var headerFields: HTTPFields
    public var client: String

    public init(method: String, url: String, httpVersion: String, headerFields: HTTPFields, client: String) {
        self.method = method
        self.url = url
        self.httpVersion = httpVersion
        self.headerFields = headerFields
        self.client = client
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("method", method)
        writer.field("url", url: url)
        writer.field("http_version", httpVersion)
        writer.field("client", client)
        writer.field("headers", headers: headerFields)
    }
}

/// `request.didFailToCreateRequest`: the input was no request (parse error, timeout, TLS failure).
public struct RequestDidFailToCreateRequest: EventKind {
    public static let name = "request.didFailToCreateRequest"
    public var error: ProxyError

    public init(error: ProxyError) {
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("error", error)
    }
}

/// `request.didAuthorize`: the request passed the proxy's checks and will be forwarded.
public struct RequestDidAuthorize: EventKind {
    public init() {}
    public static let name = "request.didAuthorize"

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {}
}

/// `request.didRejectClient`: a parsed request the proxy refuses to serve.
public struct RequestDidRejectClient: EventKind {
    public static let name = "request.didRejectClient"
    public var error: ProxyError

    public init(error: ProxyError) {
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("error", error)
    }
}

/// `request.didAdaptRequest`: the request as it goes upstream, after hop-by-hop removal and adapters;
/// with the header rule that changed it (`headers.rules`) and what that rule changed, if one did.
public struct RequestDidAdaptRequest: EventKind {
    public static let name = "request.didAdaptRequest"
    public var upstreamTarget: String
    public var headerFields: HTTPFields
    /// The matching rule's host patterns, when a header rule applied.
    public var rule: String?
    public var changes: HeaderChanges

    public init(upstreamTarget: String, headerFields: HTTPFields, rule: String? = nil, changes: HeaderChanges = HeaderChanges()) {
        self.upstreamTarget = upstreamTarget
        self.headerFields = headerFields
        self.rule = rule
        self.changes = changes
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("upstream_target", url: upstreamTarget)
        writer.field("headers", headers: headerFields)
        if let rule { encodeHeaderRule(rule, changes, to: &writer) }
    }
}

/// `request.didAdaptResponse`: a header rule (`headers.rules[i].response`) changed the response
/// before it went to the client.
public struct RequestDidAdaptResponse: EventKind {
    public static let name = "request.didAdaptResponse"
    public var rule: String
    public var changes: HeaderChanges

    public init(rule: String, changes: HeaderChanges) {
        self.rule = rule
        self.changes = changes
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        encodeHeaderRule(rule, changes, to: &writer)
    }
}

/// `rule`, then `set` and `added` (header maps, secrets redacted as everywhere in the log) and
/// `removed` (names), each only when not empty.
private func encodeHeaderRule<Writer: EventFieldWriter & ~Copyable>(_ rule: String, _ changes: HeaderChanges,
                                                                     to writer: inout Writer) {
    writer.field("rule", rule)
    if !changes.set.isEmpty { writer.field("set", headers: changes.set) }
    if !changes.added.isEmpty { writer.field("added", headers: changes.added) }
    if !changes.removed.isEmpty { writer.field("removed", changes.removed) }
}

/// `request.didLookUpCache`: what the cache had for the request, and why it could or could not use it.
public struct RequestDidLookUpCache: EventKind {
    public static let name = "request.didLookUpCache"
    /// "hit", "miss", "stale", "revalidated", "collapsed", "bypass", "only_if_cached_miss".
    public var result: String
    /// Why, where there is more to say, e.g. "request_no_cache", "vary_mismatch", "uri_miss", "method".
    public var reason: String?
    /// The stored response's age and remaining freshness in seconds (negative when stale).
    public var age: Int?
    public var ttl: Int?

    public init(result: String, reason: String? = nil, age: Int? = nil, ttl: Int? = nil) {
        self.result = result
        self.reason = reason
        self.age = age
        self.ttl = ttl
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("result", result)
        if let reason { writer.field("reason", reason) }
        if let age { writer.field("age", age) }
        if let ttl { writer.field("ttl", ttl) }
    }
}

/// `request.isRetrying`: another upstream attempt starts after `delay` seconds.
public struct RequestIsRetrying: EventKind {
    public static let name = "request.isRetrying"
    /// The number of the attempt about to start (2 for the first retry).
    public var attempt: Int
    public var delay: Double
    /// The status (`"503"`) or error code (`"upstream_connect_failed"`) retried, or
    /// `"stale_pooled_connection"`.
    public var reason: String

    public init(attempt: Int, delay: Double, reason: String) {
        self.attempt = attempt
        self.delay = delay
        self.reason = reason
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("attempt", attempt)
        writer.field("delay_ms", milliseconds: delay * 1000)
        writer.field("reason", reason)
    }
}

/// `request.didResume`: a GET response broke off mid-body and is asked for again from `offset`
/// (`Range: bytes=offset-` with `If-Range: validator`), to be spliced onto what the client has.
public struct RequestDidResume: EventKind {
    public static let name = "request.didResume"
    /// Body bytes the client already has.
    public var offset: UInt64
    /// The strong `ETag` or `Last-Modified` sent as `If-Range`.
    public var validator: String
    /// The number of the attempt about to start.
    public var attempt: Int
    /// The error code of the failure resumed from.
    public var reason: String

    public init(offset: UInt64, validator: String, attempt: Int, reason: String) {
        self.offset = offset
        self.validator = validator
        self.attempt = attempt
        self.reason = reason
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("offset", offset)
        writer.field("validator", validator)
        writer.field("attempt", attempt)
        writer.field("reason", reason)
    }
}

/// `request.didFinish`: the exchange is over; carries the summary the default log writes as `exchange`.
public struct RequestDidFinish: EventKind {
    public static let name = "request.didFinish"
    public static let interest = EventInterest.summaries
    /// The summary, held by reference: every monitor (log, metrics, live view) reads the summary of
    /// every exchange, and a copy of it would retain and release each of its strings and arrays.
    public let finished: FinishedExchange

    public init(summary: consuming ExchangeSummary) {
        finished = FinishedExchange(summary)
    }

    init(finished: FinishedExchange) {
        self.finished = finished
    }

    /// A copy of the summary; monitors read it in place with `LookoutEvent.withSummary`.
    public var summary: ExchangeSummary { finished.summary }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        if let status = finished.summary.status { writer.field("status", status) }
        writer.field("ms", milliseconds: finished.summary.totalMilliseconds)
        if let error = finished.summary.error { writer.field("error", error) }
    }
}

/// A finished exchange's summary in an object of its own, so that it can be lent out without a
/// copy: Swift borrows a `let` property of a final class that a caller passes in, where it copies a
/// struct's field read through a generic event box. It is also its `request.didFinish` event's
/// box (`LookoutEvent(finished:)`).
///
/// `@unchecked Sendable`: the summary and context are constants; the shared record is written
/// once, before `recordState` publishes it.
public final class FinishedExchange: EventBoxBase, @unchecked Sendable {
    public let summary: ExchangeSummary
    /// The summary's record as the first monitor that wrote it encoded it, tagged with the
    /// encoder's format, for another monitor that writes the same record (the JSON-lines log and
    /// the live view both write the log's summary line): one encoding per exchange instead of one
    /// per monitor. Monitors may run on different threads: the first to claim `recordState`
    /// (empty → writing) stores the record, then publishes it (→ ready, release); a reader uses
    /// it only after seeing ready (acquire). Set once, so no lock is needed, nor allocated.
    private let recordState = Atomic<UInt8>(0)
    nonisolated(unsafe) private var sharedFormat: UInt8 = 0
    nonisolated(unsafe) private var sharedBytes: [UInt8] = []

    /// `context`: its event's; by default the summary's end, connection and request.
    public init(_ summary: consuming ExchangeSummary, context: EventContext? = nil) {
        let context = context ?? EventContext(time: summary.end, connectionID: summary.connectionID,
                                              requestID: summary.requestID)
        self.summary = summary
        super.init(context: context)
    }

    override var anyKind: any EventKind { RequestDidFinish(finished: self) }
    override var name: String { RequestDidFinish.name }
    override var interest: EventInterest { RequestDidFinish.interest }
    override func encodeFields<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        RequestDidFinish(finished: self).encode(to: &writer)
    }

    /// The record another monitor kept in `format`, if any.
    public func sharedRecord(format: UInt8) -> [UInt8]? {
        guard recordState.load(ordering: .acquiring) == 2, sharedFormat == format else { return nil }
        return sharedBytes
    }

    /// Offers `bytes`, this summary's record in `format`, to the monitors that come later; the
    /// first record kept stays.
    public func share(record bytes: [UInt8], format: UInt8) {
        guard recordState.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged else { return }
        sharedFormat = format
        sharedBytes = bytes
        recordState.store(2, ordering: .releasing)
    }
}
