/// An HTTP protocol version: 1.0 and 1.1 on the HTTP/1 wire, 2 for requests that arrived over an
/// HTTP/2 stream (their heads are translated, never parsed).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public static let http2 = HTTPVersion(major: 2, minor: 0)

    /// "HTTP/1.1", "HTTP/2" (RFC 9113 names the protocol without a minor version).
    public var description: String {
        // Every exchange's summary names its version: the usual ones without interpolating.
        switch (major, minor) {
        case (1, 1): return "HTTP/1.1"
        case (1, 0): return "HTTP/1.0"
        case (2, _): return "HTTP/2"
        default: return major >= 2 ? "HTTP/\(major)" : "HTTP/\(major).\(minor)"
        }
    }
}
