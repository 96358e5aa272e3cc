#if canImport(Glibc)
import Glibc
#endif

/// A point on the monotonic clock, in nanoseconds. Events carry these; wall-clock time is derived
/// once per record from a single reading taken at start-up, so the hot path makes one cheap clock call.
public struct Instant: Sendable, Hashable, Comparable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// Now, on CLOCK_MONOTONIC.
    @inline(__always) public static func now() -> Instant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Instant(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }

    /// Milliseconds from `earlier` to `self` (negative if `earlier` is later).
    public func milliseconds(since earlier: Instant) -> Double {
        (Double(nanoseconds) - Double(earlier.nanoseconds)) / 1_000_000
    }

    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// Microseconds since the Unix epoch for this instant.
    public var unixMicroseconds: Int64 { WallClock.anchor.unixMicroseconds(for: self) }

    /// Nanoseconds since the Unix epoch: the same anchor as `unixMicroseconds`, so spans and log
    /// lines made from one reading never disagree.
    public var unixNanoseconds: UInt64 { WallClock.anchor.unixNanoseconds(for: self) }
}

/// Ties the monotonic clock to UTC, read once.
struct WallClock: Sendable {
    let monotonic: UInt64
    let unixMicros: Int64

    static let anchor: WallClock = {
        var real = timespec()
        var mono = timespec()
        clock_gettime(CLOCK_REALTIME, &real)
        clock_gettime(CLOCK_MONOTONIC, &mono)
        return WallClock(monotonic: UInt64(mono.tv_sec) * 1_000_000_000 + UInt64(mono.tv_nsec),
                         unixMicros: Int64(real.tv_sec) * 1_000_000 + Int64(real.tv_nsec / 1000))
    }()

    func unixNanoseconds(for instant: Instant) -> UInt64 {
        UInt64(max(0, unixMicros * 1000 + (Int64(instant.nanoseconds) - Int64(monotonic))))
    }

    func unixMicroseconds(for instant: Instant) -> Int64 {
        unixMicros + (Int64(instant.nanoseconds) - Int64(monotonic)) / 1000
    }
}
