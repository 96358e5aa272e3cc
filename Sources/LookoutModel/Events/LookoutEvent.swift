import HTTPTypes

/// Who an event is about and when it happened.
public struct EventContext: Sendable {
    public var time: Instant
    public var connectionID: UInt64
    public var requestID: UInt64?
    public var taskID: UInt64?

    public init(time: Instant = .now(), connectionID: UInt64, requestID: UInt64? = nil, taskID: UInt64? = nil) {
        self.time = time
        self.connectionID = connectionID
        self.requestID = requestID
        self.taskID = taskID
    }
}

/// One kind of event: its log name, who must ask for it, and its payload fields.
///
/// Every kind is one struct in this folder (`ConnectionEvents.swift`, `RequestEvents.swift`,
/// `TaskEvents.swift`, `TunnelEvents.swift`, `SessionEvents.swift`), and that struct is the only
/// place that knows the kind: adding one means writing its struct and its line in the encoding test
/// (`EventRecordTests`), nothing else. Monitors look at `LookoutEvent.kind` with `as?` or a `switch`
/// of type patterns for the kinds they care about.
public protocol EventKind: Sendable {
    /// The name in the log, `subject.method`, e.g. `task.didResolve`.
    static var name: String { get }
    /// What a monitor must declare to receive it; `.lifecycle` unless the kind says otherwise.
    static var interest: EventInterest { get }
    /// Writes the payload fields (the ids and time are written from the context).
    func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer)
}

extension EventKind {
    public static var interest: EventInterest { .lifecycle }
}

/// Where an event kind writes its fields: the JSON-lines log, and whatever later monitor needs
/// them by name. Secrets are the writer's business: `url:` and `headers:` values are redacted by
/// a writer that is told to.
public protocol EventFieldWriter: ~Copyable {
    mutating func field(_ key: StaticString, _ value: String)
    mutating func field(_ key: StaticString, url: String)
    mutating func field(_ key: StaticString, _ value: Int)
    mutating func field(_ key: StaticString, _ value: UInt64)
    mutating func field(_ key: StaticString, _ value: Bool)
    /// A duration or offset in milliseconds (negative = did not happen).
    mutating func field(_ key: StaticString, milliseconds: Double)
    /// A quantity with up to three decimals (a rate, a share).
    mutating func field(_ key: StaticString, number: Double)
    mutating func field(_ key: StaticString, _ values: [String])
    mutating func field(_ key: StaticString, headers: HTTPFields)
    mutating func field(_ key: StaticString, _ error: ProxyError)
    mutating func field(_ key: StaticString, _ metrics: TaskMetrics)
    /// The trust decision's fields, inline (rule, evaluator, result, reason, message, presented_pins).
    mutating func trustFields(_ decision: TrustDecision)
}

/// One step in the life of a connection, exchange, upstream task, tunnel or the session.
///
/// One reference to a box that holds the context and the kind inline: posting an event to several
/// mailboxes copies a pointer, and building it costs one allocation whatever the kind's size.
public struct LookoutEvent: Sendable {
    private let box: EventBoxBase

    public init<Kind: EventKind>(_ context: EventContext, _ kind: Kind) {
        box = EventBox(context: context, kind: kind)
    }

    /// `request.didFinish` for `finished`, which is its own box: one allocation per exchange, not
    /// a box around the object that holds the summary.
    public init(finished: FinishedExchange) {
        box = finished
    }

    public var context: EventContext { box.context }
    /// What happened; its type is the event's kind.
    public var kind: any EventKind { box.anyKind }
    /// The log name, e.g. `task.didResolve`.
    public var name: String { box.name }
    public var interest: EventInterest { box.interest }

    /// The kind, when it is `Kind` (a class check, no existential opened).
    public func kind<Kind: EventKind>(_ type: Kind.Type) -> Kind? {
        // Decided per specialisation: other kinds pay no check for the finished exchange's box.
        if Kind.self == RequestDidFinish.self {
            return finishedExchange.flatMap { RequestDidFinish(finished: $0) as? Kind }
        }
        return (box as? EventBox<Kind>)?.kind
    }

    /// The finished exchange a `request.didFinish` event carries; nil for any other event.
    public var finishedExchange: FinishedExchange? {
        box as? FinishedExchange ?? (box as? EventBox<RequestDidFinish>)?.kind.finished
    }

    /// Runs `body` on the summary of a `request.didFinish` event where it is stored, without
    /// copying it (a copy retains and releases each of its strings and arrays); nil for other events.
    @inline(__always)
    public func withSummary<Result>(_ body: (borrowing ExchangeSummary) throws -> Result) rethrows -> Result? {
        guard let finished = finishedExchange else { return nil }
        return try Self.lend(finished, to: body)
    }

    /// Never inlined: read from a parameter, the summary is lent to `body` in place; read from a
    /// local the optimizer copies it (measured with `objdump`, Swift 6.3 -O).
    @inline(never)
    private static func lend<Result>(_ finished: FinishedExchange,
                                     to body: (borrowing ExchangeSummary) throws -> Result) rethrows -> Result {
        try body(finished.summary)
    }

    /// Writes the kind's payload fields.
    public func encodeFields<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        box.encodeFields(to: &writer)
    }
}

/// The type-erased box: `EventBox<Kind>`, or a `FinishedExchange`, which boxes itself. Public only
/// so that `FinishedExchange` can be a public subclass; nothing outside the module sees its members.
public class EventBoxBase: @unchecked Sendable {  // immutable
    let context: EventContext
    init(context: EventContext) { self.context = context }
    var anyKind: any EventKind { preconditionFailure("abstract") }
    var name: String { preconditionFailure("abstract") }
    var interest: EventInterest { preconditionFailure("abstract") }
    func encodeFields<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) { preconditionFailure("abstract") }
}

final class EventBox<Kind: EventKind>: EventBoxBase, @unchecked Sendable {  // immutable
    let kind: Kind
    init(context: EventContext, kind: Kind) {
        self.kind = kind
        super.init(context: context)
    }
    override var anyKind: any EventKind { kind }
    override var name: String { Kind.name }
    override var interest: EventInterest { Kind.interest }
    override func encodeFields<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        kind.encode(to: &writer)
    }
}

/// What a monitor wants delivered. Lifecycle events are built only when some monitor wants them,
/// so a summary-only log costs one event per exchange.
public struct EventInterest: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `request.didFinish`, `connection.wasRejected` (refusals are not exchanges but must be seen) and `session.*`.
    public static let summaries = EventInterest(rawValue: 1)
    /// Every other event.
    public static let lifecycle = EventInterest(rawValue: 2)
    public static let all: EventInterest = [.summaries, .lifecycle]
}
