import HTTPTypes

/// A page of the admin endpoint served from outside the core (the Prometheus `/metrics` page).
/// The core answers its own pages first (`/`, `/healthz`, `/cache/…`), then asks each endpoint in
/// the order given to `Session`; the first answer wins.
///
/// `answer` runs on the event loop of the connection that asked: it must be quick and must only
/// touch state that is safe to read from any thread.
public protocol AdminEndpoint: Sendable {
    /// The answer for `request`, or nil when the path is not this endpoint's.
    func answer(_ request: AdminRequest) -> AdminAnswer?
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

    public init(method: HTTPRequest.Method, path: String, query: String?, headerFields: HTTPFields,
                statistics: SessionStatistics) {
        self.method = method
        self.path = path
        self.query = query
        self.headerFields = headerFields
        self.statistics = statistics
    }
}

/// What an endpoint sends back; the core adds the framing and `Cache-Control: no-store`.
public struct AdminAnswer: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int = 200, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}
