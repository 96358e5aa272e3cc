/// `messages`: reading WebSocket messages, event streams and gRPC messages as they pass.
public struct MessagesSettings: Sendable, Equatable {
    /// `enabled`: false relays upgraded connections and streams as opaque bytes.
    public var enabled: Bool
    /// `preview_bytes`: how much of each message the `ws.message`/`stream.event` records show.
    public var previewBytes: Int
    /// `decode_budget_bytes`: payload bytes one connection may decode (both ways together);
    /// beyond it only frame headers are read.
    public var decodeBudgetBytes: Int

    public init(enabled: Bool = true, previewBytes: Int = 256, decodeBudgetBytes: Int = 1 << 20) {
        self.enabled = enabled
        self.previewBytes = previewBytes
        self.decodeBudgetBytes = decodeBudgetBytes
    }
}
