#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`, for the state Lookout shares between threads.
///
/// It takes the place of `Synchronization.Mutex` because ThreadSanitizer intercepts
/// `pthread_mutex_lock`/`unlock` but not the futex calls `Mutex` makes on Linux: with `Mutex`,
/// every access it guards was reported as a race (`make sanitize`). Uncontended, both are one
/// atomic operation each way. Made once per long-lived owner (a monitor, a store, a cache):
/// the value and the mutex live in one object that never moves.
public struct Guarded<Value: ~Copyable>: @unchecked Sendable {
    @usableFromInline let storage: GuardedStorage<Value>

    @inlinable
    public init(_ value: consuming Value) {
        storage = GuardedStorage(value)
    }

    /// Runs `body` with the value while holding the lock. `body` must not take the same lock again.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        let storage = storage
        pthread_mutex_lock(storage.mutex)
        defer { pthread_mutex_unlock(storage.mutex) }
        return try body(&storage.value)
    }
}

@usableFromInline
final class GuardedStorage<Value: ~Copyable> {
    // The mutex first: an empty value (`Guarded(())`) laid out before it would share its
    // address, and ThreadSanitizer would take reading the one for racing with the other.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    @inlinable
    init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        _ = pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        _ = pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }
}
