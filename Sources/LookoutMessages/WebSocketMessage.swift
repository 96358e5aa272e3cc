/// One WebSocket message (or control frame) as it passed: what the records and the capture say.
public struct WebSocketMessage: Sendable, Equatable {
    public enum Opcode: UInt8, Sendable {
        case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10

        public var name: String {
            switch self {
            case .continuation: "continuation"
            case .text: "text"
            case .binary: "binary"
            case .close: "close"
            case .ping: "ping"
            case .pong: "pong"
            }
        }
    }

    public var opcode: Opcode
    /// Frames and their headers, as they crossed the wire.
    public var wireBytes: Int
    /// The payload's length (after inflating, for a compressed message); nil when only frame
    /// headers were read (the decode budget was spent) or the payload did not inflate.
    public var bytes: Int?
    /// How many frames the message came in (fragmentation, RFC 6455 §5.4).
    public var frames: Int
    /// Sent compressed (RSV1 on its first frame, RFC 7692 §6).
    public var compressed: Bool
    /// Masked by the client (RFC 6455 §5.3).
    public var masked: Bool
    /// The payload's beginning, up to the decoder's keep limit (inflated when compressed).
    public var payload: [UInt8]
    /// The payload is longer than `payload`.
    public var truncated: Bool
    /// A close frame's status code and reason (RFC 6455 §5.5.1).
    public var closeCode: Int?
    public var closeReason: String?

    public init(opcode: Opcode, wireBytes: Int, bytes: Int?, frames: Int, compressed: Bool, masked: Bool,
                payload: [UInt8], truncated: Bool, closeCode: Int? = nil, closeReason: String? = nil) {
        self.opcode = opcode
        self.wireBytes = wireBytes
        self.bytes = bytes
        self.frames = frames
        self.compressed = compressed
        self.masked = masked
        self.payload = payload
        self.truncated = truncated
        self.closeCode = closeCode
        self.closeReason = closeReason
    }
}
