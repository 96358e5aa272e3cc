/// What one upstream attempt did and when, like `URLSessionTaskTransactionMetrics`.
/// A phase that did not happen stays nil (e.g. DNS on a reused connection).
public struct TransactionMetrics: Sendable {
    public var fetchStart: Instant
    public var domainLookupStart: Instant?
    public var domainLookupEnd: Instant?
    public var connectStart: Instant?
    public var connectEnd: Instant?
    public var secureConnectionStart: Instant?
    public var secureConnectionEnd: Instant?
    public var requestStart: Instant?
    public var requestEnd: Instant?
    public var responseStart: Instant?
    public var responseEnd: Instant?

    /// The absolute URL this attempt requested.
    public var url: String?
    /// The error that ended the attempt, if one did.
    public var errorCode: String?

    /// The ALPN name of what the attempt spoke upstream: "http/1.1", "h2", or "tunnel".
    public var networkProtocolName: String = "http/1.1"
    public var isReusedConnection = false
    /// The parent proxy the connection went through ("http://host:port", no credentials).
    public var proxy: String?
    public var remoteAddress: String?
    public var localAddress: String?
    public var upstreamConnectionID: UInt64?
    /// The HTTP/2 stream that carried the attempt (`networkProtocolName` "h2").
    public var upstreamStreamID: Int32?
    public var statusCode: Int?
    /// Set for https origins, also on reused connections (whose handshake timings stay nil).
    public var tls: UpstreamTLSDetails? {
        get { tlsBox?.value }
        set { tlsBox = newValue.map(ValueBox.init) }
    }
    /// `tls`, boxed: the attempts a connection carries share the box its handshake made, and the
    /// metrics stay small to move (`ValueBox`).
    public var tlsBox: ValueBox<UpstreamTLSDetails>?

    public var requestHeaderBytes: UInt64 = 0
    public var requestBodyBytes: UInt64 = 0
    public var responseHeaderBytes: UInt64 = 0
    public var responseBodyBytes: UInt64 = 0

    public init(fetchStart: Instant) { self.fetchStart = fetchStart }

    /// HAR-style phase durations in milliseconds; -1 where the phase did not happen.
    public var phases: (dns: Double, connect: Double, tls: Double, send: Double, wait: Double, receive: Double) {
        func span(_ start: Instant?, _ end: Instant?) -> Double {
            guard let start, let end else { return -1 }
            return end.milliseconds(since: start)
        }
        return (span(domainLookupStart, domainLookupEnd), span(connectStart, connectEnd),
                span(secureConnectionStart, secureConnectionEnd), span(requestStart, requestEnd),
                span(requestEnd, responseStart), span(responseStart, responseEnd))
    }
}

/// All the transactions of one exchange: retries and followed redirects add transactions.
public struct TaskMetrics: Sendable {
    public var transactions: [TransactionMetrics]
    public var taskStart: Instant
    public var taskEnd: Instant?
    public var redirectCount: Int

    public init(taskStart: Instant) {
        self.transactions = []
        self.taskStart = taskStart
        self.redirectCount = 0
    }
}
