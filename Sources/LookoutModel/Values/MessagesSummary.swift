/// The summary record's `messages` object: what passed inside a WebSocket, an event stream or a
/// gRPC call, with its timing.
public struct MessagesSummary: Sendable, Equatable {
    /// Messages and their payload bytes one way.
    public struct Direction: Sendable, Equatable {
        public var count = 0
        public var bytes: UInt64 = 0
        public init() {}
    }

    /// Quantiles of the gaps between consecutive events, in milliseconds.
    public struct Gaps: Sendable, Equatable {
        public var p50: Double
        public var p99: Double
        public var max: Double
        public init(p50: Double, p99: Double, max: Double) {
            self.p50 = p50
            self.p99 = p99
            self.max = max
        }
    }

    /// `websocket`, `sse`, `ndjson`, `json-seq`, `grpc`, `grpc-web`.
    public var protocolName: String
    public var clientToUpstream = Direction()
    public var upstreamToClient = Direction()
    /// The first and last message, in milliseconds since the 101 (WebSocket) or the request's end.
    public var firstMilliseconds: Double?
    public var lastMilliseconds: Double?
    /// Event streams and gRPC responses: the first event from the origin, since the request's end.
    public var firstEventMilliseconds: Double?
    /// The gaps between the origin's events (nil with fewer than two).
    public var gaps: Gaps?
    /// WebSocket: the first close frame's code and reason, and who sent it (`client`, `upstream`).
    public var closeCode: Int?
    public var closeReason: String?
    public var closedBy: String?
    /// WebSocket: permessage-deflate was negotiated.
    public var deflate = false
    /// `full`, `frame_headers` (the decode budget ran out), or `stopped: REASON` (a frame broke
    /// the protocol; the bytes were still relayed).
    public var decoding = "full"
    /// gRPC: the call's `grpc-status` and `grpc-message` trailers.
    public var grpcStatus: Int?
    public var grpcMessage: String?
    /// The origin's gaps in milliseconds, for metrics (every one up to 8192 in a stream, then a
    /// sample spanning it); not logged.
    public var gapSamples: [Double] = []

    public init(protocolName: String) {
        self.protocolName = protocolName
    }

    public var count: Int { clientToUpstream.count + upstreamToClient.count }
}
