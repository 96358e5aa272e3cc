import HTTPTypes
import LookoutHTTP

/// Everything the summary log record says about one finished exchange (`LOG.md` in LookoutMonitors).
public struct ExchangeSummary: Sendable {
    /// How the exchange was handled.
    public enum Kind: String, Sendable {
        case http, tunnel, intercepted, admin
    }

    public var requestID: UInt64
    public var connectionID: UInt64
    public var clientAddress: String
    public var kind: Kind
    public var method: String
    /// Absolute URL, or `host:port` for tunnels.
    public var url: String
    public var httpVersion: String
    /// The HTTP/2 stream the client sent the request on (nil for HTTP/1.x).
    public var clientStreamID: Int32?
    /// The status sent to the client, if one was sent.
    public var status: Int?
    public var start: Instant
    public var end: Instant
    /// The last upstream transaction (timings, address, reuse), when one was made.
    public var upstream: TransactionMetrics?
    public var attempts: Int
    public var redirects: Int
    /// Every upstream attempt, in order (the last is `upstream`).
    public var transactions: [TransactionMetrics] = []
    /// The URL of the last hop, after followed redirects.
    public var finalURL: String?
    public var cache: CacheSummary?
    /// The files the exchange's bodies were captured to (`capture.rules`).
    public var capture: CaptureSummary? {
        get { captureBox?.value }
        set { captureBox = newValue.map(ValueBox.init) }
    }
    public var error: ProxyError?
    /// Bytes of the request and response heads and bodies exchanged with the upstream.
    public var requestHeaders: HTTPFields?
    public var responseHeaders: HTTPFields?
    /// Tunnels, and exchanges that switched protocols: the bytes relayed each way after the switch.
    public var tunnelBytesClientToUpstream: UInt64?
    public var tunnelBytesUpstreamToClient: UInt64?
    /// The protocol the exchange switched to after a 101 (the origin's `Upgrade`), e.g. "websocket".
    public var upgrade: String?
    /// The URL the client asked for, when a `map` rule sent the request elsewhere (`url` is then
    /// where it went: the target's URL, or the `file://` URL of a map-local answer).
    public var mappedFrom: String?
    /// What the host's shaping rule did (`shaping.rules`).
    public var shaping: ShapingSummary? {
        get { shapingBox?.value }
        set { shapingBox = newValue.map(ValueBox.init) }
    }
    /// How long breakpoints held the exchange, in all (nil when none did).
    public var heldMilliseconds: Double?
    /// Who changed the exchange on its way: `breakpoint:RULE`, `operator:ADDRESS`, `hook:NAME`, in
    /// the order they did. An exchange something edited never passes for an untouched one.
    public var modifiedBy: [String] = []
    /// The exchange this one sends again (`POST /exchanges/ID/resend`), and the operator's address.
    public var resentFrom: UInt64?
    public var resentBy: String?
    /// The recording and entry that answered, when a recording did (`simulate`).
    public var simulated: (recording: String, entry: Int)?
    /// What passed inside a WebSocket, an event stream or a gRPC call (`messages`).
    public var messages: MessagesSummary? {
        get { messagesBox?.value }
        set { messagesBox = newValue.map(ValueBox.init) }
    }
    /// The exchange's trace (`otel`): its span, the client's, and whether it is sampled.
    public var trace: TraceContext?
    /// The JA4 fingerprint of the client's ClientHello (an intercepted connection, or a blind
    /// tunnel's first record).
    public var clientJA4: String?
    /// Passive security findings (`audit`).
    public var findings: [AuditFinding] = []
    /// What the egress policy decided (`policy`), when one is configured.
    public var policy: PolicyDecision? {
        get { policyBox?.value }
        set { policyBox = newValue.map(ValueBox.init) }
    }
    /// How a connection that did not ask Lookout as a proxy reached it (a transparent or SOCKS5
    /// listener), and where it was going.
    public var captured: CapturedConnection? {
        get { capturedBox?.value }
        set { capturedBox = newValue.map(ValueBox.init) }
    }

    // Parts most exchanges leave nil, boxed (`ValueBox`): inline they would be a quarter of the
    // summary's bytes, copied on each of its moves.
    private var captureBox: ValueBox<CaptureSummary>?
    private var shapingBox: ValueBox<ShapingSummary>?
    private var messagesBox: ValueBox<MessagesSummary>?
    private var capturedBox: ValueBox<CapturedConnection>?
    private var policyBox: ValueBox<PolicyDecision>?

    public init(requestID: UInt64, connectionID: UInt64, clientAddress: String, kind: Kind,
                method: String, url: String, httpVersion: String, start: Instant) {
        self.requestID = requestID
        self.connectionID = connectionID
        self.clientAddress = clientAddress
        self.kind = kind
        self.method = method
        self.url = url
        self.httpVersion = httpVersion
        self.start = start
        self.end = start
        self.attempts = 0
        self.redirects = 0
    }

    /// Milliseconds from the request head to the end of the exchange.
    public var totalMilliseconds: Double { end.milliseconds(since: start) }

    /// The host the client addressed, from `url` (a tunnel's `host:port` too), without the port;
    /// an IPv6 literal keeps its brackets.
    public var host: Substring { URLAuthority.host(in: url) }
}

/// The summary record's `capture` and `original_destination`: a connection a transparent or
/// SOCKS5 listener took.
public struct CapturedConnection: Sendable, Equatable {
    /// "transparent" or "socks5".
    public var method: String
    /// Where the client was going: the address a redirect rule changed ("10.0.0.5:443"), or what
    /// a SOCKS5 client asked for ("example.com:443").
    public var destination: String

    public init(method: String, destination: String) {
        self.method = method
        self.destination = destination
    }
}

/// The summary record's `cache` object.
public struct CacheSummary: Sendable, Equatable {
    /// "hit", "miss", "stale", "revalidated", "bypass".
    public var status: String
    public var age: Int?
    public var ttl: Int?
    public var stored: Bool

    public init(status: String, age: Int? = nil, ttl: Int? = nil, stored: Bool = false) {
        self.status = status
        self.age = age
        self.ttl = ttl
        self.stored = stored
    }
}

/// The summary record's `capture` object.
public struct CaptureSummary: Sendable, Equatable {
    /// The files, absolute paths; nil for a body that was not captured (none, or not asked for).
    public var request: String?
    public var response: String?
    /// The messages inside a WebSocket or stream, one JSON line each (`<id>.messages.jsonl`).
    public var messages: String?
    /// A body was longer than the rule's `max_body_bytes`: its file holds only the beginning.
    public var truncated = false
    /// Why a body's capture stopped early ("response: No space left on device").
    public var error: String?

    public init(request: String? = nil, response: String? = nil, truncated: Bool = false, error: String? = nil) {
        self.request = request
        self.response = response
        self.truncated = truncated
        self.error = error
    }
}

/// The summary record's `shaping` object.
public struct ShapingSummary: Sendable, Equatable {
    public var rule: String
    public var profile: String
    public var latencyMilliseconds: Double
    public var downloadKbps: Double
    public var uploadKbps: Double
    /// The faults injected into this exchange: "status", "reset_after_bytes", "stall".
    public var faults: [String] = []

    public init(rule: String, profile: String, latencyMilliseconds: Double, downloadKbps: Double, uploadKbps: Double) {
        self.rule = rule
        self.profile = profile
        self.latencyMilliseconds = latencyMilliseconds
        self.downloadKbps = downloadKbps
        self.uploadKbps = uploadKbps
    }
}
