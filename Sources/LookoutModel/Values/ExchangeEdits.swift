/// What an operator or a hook changes of a paused message (`POST /exchanges/ID/resume`, a hook's
/// `modify`, a resend's edits). Every member is optional; nil leaves that part as it is.
public struct ExchangeEdits: Sendable, Equatable {
    /// Request only: the method and the absolute URL.
    public var method: String?
    public var url: String?
    /// Response only: the status.
    public var status: Int?
    /// Fields set (replacing every field of that name) and removed, names as given.
    public var setHeaders: [(name: String, value: String)] = []
    public var removeHeaders: [String] = []
    /// The new body; `Content-Length` follows it (and `Transfer-Encoding` goes).
    public var body: [UInt8]?

    public init(method: String? = nil, url: String? = nil, status: Int? = nil,
                setHeaders: [(name: String, value: String)] = [], removeHeaders: [String] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.status = status
        self.setHeaders = setHeaders
        self.removeHeaders = removeHeaders
        self.body = body
    }

    public var isEmpty: Bool {
        method == nil && url == nil && status == nil && setHeaders.isEmpty && removeHeaders.isEmpty && body == nil
    }

    /// What the edits touch, for the records: "method", "url", "status", "header:NAME", "body".
    public var changes: [String] {
        var names: [String] = []
        if method != nil { names.append("method") }
        if url != nil { names.append("url") }
        if status != nil { names.append("status") }
        for field in setHeaders { names.append("header:" + field.name.lowercased()) }
        for name in removeHeaders where !setHeaders.contains(where: { $0.name.lowercased() == name.lowercased() }) {
            names.append("header:" + name.lowercased())
        }
        if body != nil { names.append("body") }
        return names
    }

    public static func == (a: ExchangeEdits, b: ExchangeEdits) -> Bool {
        a.method == b.method && a.url == b.url && a.status == b.status && a.removeHeaders == b.removeHeaders
            && a.body == b.body && a.setHeaders.map(\.name) == b.setHeaders.map(\.name)
            && a.setHeaders.map(\.value) == b.setHeaders.map(\.value)
    }
}

/// A message an operator answers with in place of the upstream's (`POST /exchanges/ID/answer`).
public struct OperatorAnswer: Sendable, Equatable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func == (a: OperatorAnswer, b: OperatorAnswer) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map(\.name) == b.headers.map(\.name)
            && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// What an operator does with a held exchange.
public enum OperatorAction: Sendable, Equatable {
    /// Go on, with the edits applied.
    case resume(ExchangeEdits)
    /// End it: the client gets `502 aborted_by_operator`.
    case abort
    /// Answer it without (or instead of) the upstream.
    case answer(OperatorAnswer)

    public var name: String {
        switch self {
        case .resume: return "continue"
        case .abort: return "abort"
        case .answer: return "answer"
        }
    }
}

/// One exchange a breakpoint holds, as an operator sees it (`GET /exchanges?state=held`,
/// `GET /exchanges/ID`).
public struct HeldExchange: Sendable {
    public var id: UInt64
    /// "request" or "response".
    public var phase: String
    /// The breakpoint's number and filter.
    public var rule: String
    public var since: Instant
    /// The deadline's length, and what happens at it.
    public var timeout: Double
    public var onTimeout: String
    public var client: String
    /// The request as it goes upstream (its method and URL, its head's fields).
    public var method: String
    public var url: String
    /// The response's status at a response breakpoint.
    public var status: Int?
    /// The held head's fields, in order.
    public var headers: [(name: String, value: String)]
    /// The held body (at most `max_body_bytes`), and its size when that is known.
    public var body: [UInt8]
    /// False when the body was larger than `max_body_bytes`: only the head can be edited.
    public var bodyEditable: Bool

    public init(id: UInt64, phase: String, rule: String, since: Instant, timeout: Double, onTimeout: String,
                client: String, method: String, url: String, status: Int?, headers: [(name: String, value: String)],
                body: [UInt8], bodyEditable: Bool) {
        self.id = id
        self.phase = phase
        self.rule = rule
        self.since = since
        self.timeout = timeout
        self.onTimeout = onTimeout
        self.client = client
        self.method = method
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyEditable = bodyEditable
    }
}
