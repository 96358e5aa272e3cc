import Synchronization

/// Counts sockets that are open: a connection handed to `Connection.countOpen(in:)` adds one
/// and takes it away again when it closes, however it closes (FIN, RST, linger, error).
public final class OpenConnectionCounter: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    public var value: Int { count.load(ordering: .relaxed) }

    func opened() { count.add(1, ordering: .relaxed) }
    func closed() { count.subtract(1, ordering: .relaxed) }
}
