import HTTPTypes
import LookoutHTTP
import LookoutModel

/// A page of the admin endpoint served from outside the core (`/metrics`, `/events`, `/exchanges`, `/ui/`).
/// The core answers its own pages first (`/`, `/healthz`, `/cache/…`), then asks each endpoint in
/// the order given to `Session`; the first answer wins.
///
/// `answer` runs on the event loop of the connection that asked: it must be quick and must only
/// touch state that is safe to read from any thread.
public protocol AdminEndpoint: Sendable {
    /// The answer for `request`, or nil when the path is not this endpoint's.
    func answer(_ request: AdminRequest) -> AdminAnswer?
    /// A line for the status page saying what the endpoint serves (`metrics: GET /metrics …`).
    var statusLine: String? { get }
}

extension AdminEndpoint {
    public var statusLine: String? { nil }
}

/// An origin-form request to the admin endpoint, with the session's counters at that moment.
public struct AdminRequest: Sendable {
    public var method: HTTPRequest.Method
    /// The path without the query.
    public var path: String
    /// What followed `?`, if anything.
    public var query: String?
    public var headerFields: HTTPFields
    public var statistics: SessionStatistics
    /// "127.0.0.1:50000".
    public var clientAddress: String
    /// The running exchanges, for pages that list or cancel them.
    public let exchanges: (any ExchangeOperator)?
    /// Breakpoints, held exchanges and resends, for the pages that act on them.
    public let breakpoints: (any BreakpointOperator)?
    /// The request's body (admin requests are read whole, up to `AdminRequest.maxBodyBytes`).
    public var body: [UInt8]

    /// The most an admin request's body may hold: an edited body of a paused exchange, as JSON.
    public static let maxBodyBytes = 16 << 20

    /// The query's parameters, percent-decoded (a repeated name keeps its last value).
    public var parameters: [String: String] { FormURLEncoding.parameters(query) }

    public init(method: HTTPRequest.Method, path: String, query: String?, headerFields: HTTPFields,
                statistics: SessionStatistics, clientAddress: String = "", exchanges: (any ExchangeOperator)? = nil,
                breakpoints: (any BreakpointOperator)? = nil, body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headerFields = headerFields
        self.statistics = statistics
        self.clientAddress = clientAddress
        self.exchanges = exchanges
        self.breakpoints = breakpoints
        self.body = body
    }
}

/// What an endpoint sends back; the core adds the framing and `Cache-Control: no-store`.
public struct AdminAnswer: Sendable {
    public var status: Int
    public var contentType: String
    /// The whole body, for a complete answer.
    public var body: [UInt8]
    /// A body produced over time instead (`body` is then ignored), close-delimited: it lasts
    /// until the client leaves or the session shuts down.
    public var stream: AdminStreamProducer?
    /// Fields added to the answer's head (the core adds the framing, `Content-Type` and
    /// `Cache-Control: no-store` itself).
    public var headerFields = HTTPFields()
    /// The streamed body's length when known in advance (a file): sent as Content-Length, so a
    /// client can tell a complete body from a cut one; the producer then `finish`es the sink.
    public var streamLength: UInt64?

    public init(status: Int = 200, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// An answer that needs other event loops first (the in-flight exchanges live on every loop):
    /// `body` is then ignored and the connection waits, reading nothing, until `reply` is called
    /// (once, from any thread) with the complete or streamed answer.
    public var deferred: (@Sendable (_ reply: @escaping @Sendable (AdminAnswer) -> Void) -> Void)?

    public init(status: Int = 200, contentType: String, stream: AdminStreamProducer, length: UInt64? = nil) {
        self.status = status
        self.contentType = contentType
        self.body = []
        self.stream = stream
        self.streamLength = length
    }

    public init(deferred: @escaping @Sendable (_ reply: @escaping @Sendable (AdminAnswer) -> Void) -> Void) {
        self.status = 200
        self.contentType = ""
        self.body = []
        self.deferred = deferred
    }
}
