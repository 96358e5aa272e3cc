#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Wall-clock time in whole seconds since the Unix epoch, the time unit of this library.
public enum UnixTime {
    /// The current time.
    public static func now() -> Int64 {
        Int64(time(nil))
    }

    /// Seconds in one day.
    public static let day: Int64 = 86_400
}
