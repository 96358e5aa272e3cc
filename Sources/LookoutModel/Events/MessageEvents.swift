/// `ws.message`: a WebSocket message or control frame passed (after the 101), decoded from a copy.
public struct WebSocketDidPassMessage: EventKind {
    public static let name = "ws.message"
    /// `client` or `upstream`: who sent it.
    public var from: String
    public var opcode: String
    public var wireBytes: Int
    /// The payload's length, inflated when compressed; nil when only the frame headers were read.
    public var bytes: Int?
    public var frames: Int
    public var compressed: Bool
    /// Milliseconds since the 101.
    public var milliseconds: Double
    public var preview: MessagePreview?
    public var closeCode: Int?
    public var closeReason: String?

    public init(from: String, opcode: String, wireBytes: Int, bytes: Int?, frames: Int, compressed: Bool,
                milliseconds: Double, preview: MessagePreview?, closeCode: Int? = nil, closeReason: String? = nil) {
        self.from = from
        self.opcode = opcode
        self.wireBytes = wireBytes
        self.bytes = bytes
        self.frames = frames
        self.compressed = compressed
        self.milliseconds = milliseconds
        self.preview = preview
        self.closeCode = closeCode
        self.closeReason = closeReason
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("from", from)
        writer.field("opcode", opcode)
        writer.field("wire_bytes", wireBytes)
        if let bytes { writer.field("bytes", bytes) }
        if frames > 1 { writer.field("frames", frames) }
        if compressed { writer.field("compressed", true) }
        writer.field("ms", milliseconds: milliseconds)
        if let closeCode { writer.field("close_code", closeCode) }
        if let closeReason, !closeReason.isEmpty { writer.field("close_reason", closeReason) }
        preview?.encode(to: &writer)
    }
}

/// `stream.event`: an event of an event stream, or a gRPC message, passed.
public struct StreamDidPassEvent: EventKind {
    public static let name = "stream.event"
    public var from: String
    /// `sse`, `ndjson`, `json-seq`, `grpc`, `grpc-web`.
    public var format: String
    /// The event's number in its direction, from 1.
    public var index: Int
    /// Milliseconds since the request's end (for the client's own messages: since the request began).
    public var milliseconds: Double
    public var bytes: Int
    /// SSE's `event` and `id` fields.
    public var event: String?
    public var id: String?
    /// gRPC: the message's compressed flag.
    public var compressed: Bool
    public var preview: MessagePreview?

    public init(from: String, format: String, index: Int, milliseconds: Double, bytes: Int, event: String? = nil,
                id: String? = nil, compressed: Bool = false, preview: MessagePreview?) {
        self.from = from
        self.format = format
        self.index = index
        self.milliseconds = milliseconds
        self.bytes = bytes
        self.event = event
        self.id = id
        self.compressed = compressed
        self.preview = preview
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("from", from)
        writer.field("format", format)
        writer.field("index", index)
        writer.field("ms", milliseconds: milliseconds)
        writer.field("bytes", bytes)
        if let event { writer.field("event_name", event) }
        if let id { writer.field("event_id", id) }
        if compressed { writer.field("compressed", true) }
        preview?.encode(to: &writer)
    }
}

/// The beginning of a message as a record shows it: text as text, other bytes base64.
public struct MessagePreview: Sendable, Equatable {
    public var text: String?
    public var base64: String?
    /// The message is longer than the preview.
    public var truncated: Bool

    public init(text: String? = nil, base64: String? = nil, truncated: Bool) {
        self.text = text
        self.base64 = base64
        self.truncated = truncated
    }

    func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        if let text { writer.field("preview", text) }
        if let base64 { writer.field("preview_base64", base64) }
        if truncated { writer.field("preview_truncated", true) }
    }
}
