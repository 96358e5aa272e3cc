import LookoutUpstream
import Synchronization

/// Whether the session began to shut down: set once, read from any thread (new connections are
/// refused, responses announce `Connection: close`, upstream connections are not pooled).
final class ShutdownFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .relaxed) }

    /// Sets the flag; false when it was already set.
    func set() -> Bool { !value.exchange(true, ordering: .relaxed) }
}
