/// How many payload bytes one connection may still decode (`messages.decode_budget_bytes`): both
/// directions draw on it; once it is spent only frame headers are read, for the rest of the
/// connection, so a busy stream costs a bounded amount of work and memory.
public final class DecodeBudget: @unchecked Sendable {  // confined to the connection's loop queue
    public private(set) var remaining: Int
    /// The budget ran out at some point.
    public private(set) var spent = false

    public init(bytes: Int) {
        remaining = bytes
    }

    /// Takes `count` bytes; false (and spent for good) when they are not there.
    func take(_ count: Int) -> Bool {
        guard !spent else { return false }
        guard count <= remaining else {
            spent = true
            remaining = 0
            return false
        }
        remaining -= count
        return true
    }
}
