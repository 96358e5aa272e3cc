/// `upstream.didReceiveGoAway`: an origin's HTTP/2 connection is going away (RFC 9113 §6.8).
/// Streams up to `last_stream_id` may finish; those above were not processed and are retried;
/// the connection takes no new ones. Written in default mode too: it ends streams of many
/// clients at once, and no single exchange record says why.
public struct UpstreamDidReceiveGoAway: EventKind {
    public static let name = "upstream.didReceiveGoAway"
    public static let interest = EventInterest.summaries
    /// "https://host:port".
    public var origin: String
    public var upstreamConnectionID: UInt64
    /// The RFC 9113 §7 name, e.g. `NO_ERROR`.
    public var code: String
    public var lastStreamID: Int32
    /// Streams still open on the connection when it arrived.
    public var openStreams: Int
    /// The GOAWAY's debug data, when the origin sent some.
    public var debugData: String

    public init(origin: String, upstreamConnectionID: UInt64, code: String, lastStreamID: Int32, openStreams: Int, debugData: String) {
        self.origin = origin
        self.upstreamConnectionID = upstreamConnectionID
        self.code = code
        self.lastStreamID = lastStreamID
        self.openStreams = openStreams
        self.debugData = debugData
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("origin", origin)
        writer.field("upstream_conn", upstreamConnectionID)
        writer.field("code", code)
        writer.field("last_stream_id", Int(lastStreamID))
        writer.field("open_streams", openStreams)
        if !debugData.isEmpty { writer.field("debug", debugData) }
    }
}

/// `upstream.didEndHTTP2`: an origin's HTTP/2 connection failed or was closed by Lookout
/// without a GOAWAY from the origin: a protocol error, an unanswered PING, the socket ended.
/// `open_streams` failed with it.
public struct UpstreamDidEndHTTP2: EventKind {
    public static let name = "upstream.didEndHTTP2"
    public static let interest = EventInterest.summaries
    public var origin: String
    public var upstreamConnectionID: UInt64
    public var reason: String
    public var openStreams: Int

    public init(origin: String, upstreamConnectionID: UInt64, reason: String, openStreams: Int) {
        self.origin = origin
        self.upstreamConnectionID = upstreamConnectionID
        self.reason = reason
        self.openStreams = openStreams
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("origin", origin)
        writer.field("upstream_conn", upstreamConnectionID)
        writer.field("reason", reason)
        writer.field("open_streams", openStreams)
    }
}
