import Glibc

/// The buffer `HTTP2SessionCore.writeOutput` gathers small frames in, kept for the next call on
/// the same thread.
///
/// It used to be a temporary allocation. Swift puts those on the stack only up to 1 KiB, so each
/// call took 16 KiB from malloc and gave it back: too large for glibc's per-thread caches, so
/// every call went through the shared bins, split and merged chunks, and now and then
/// consolidated the small-chunk bins (1.2 % of an event loop's time at 100 HTTP/2 streams, where
/// the loop writes about once per exchange). One spare per thread makes that one allocation per
/// thread. A call that finds the slot empty — a nested one, or the first — allocates its own, so
/// two calls never share the bytes; a buffer the slot cannot take back is freed.
enum HTTP2GatherBuffer {
    static let byteCount = HTTP2SessionCore.coalescedWriteBytes

    /// The thread's spare, freed when the thread ends.
    private static let spareKey: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { spare in spare?.deallocate() }
        precondition(created == 0, "pthread_key_create failed (\(created))")
        return key
    }()

    /// Calls `body` with `byteCount` bytes nobody else is using.
    static func with<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        let buffer: UnsafeMutableRawBufferPointer
        if let spare = pthread_getspecific(spareKey) {
            pthread_setspecific(spareKey, nil)
            buffer = UnsafeMutableRawBufferPointer(start: spare, count: byteCount)
        } else {
            buffer = .allocate(byteCount: byteCount, alignment: 16)
        }
        defer {
            if pthread_getspecific(spareKey) == nil {
                pthread_setspecific(spareKey, buffer.baseAddress)
            } else {
                buffer.deallocate()
            }
        }
        return try body(buffer)
    }
}
