#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call on a socket, with the errno it set.
public struct SocketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The system call that failed ("connect", "read", …).
    public var call: String
    /// errno after the call.
    public var code: Int32

    /// A message that replaces the errno text, for failures that are not system calls (TLS).
    public var detail: String?

    public init(_ call: String, code: Int32 = errno) {
        self.call = call
        self.code = code
    }

    /// A failure described by `detail` rather than by errno, e.g. a TLS protocol error.
    public init(_ call: String, detail: String, code: Int32 = EPROTO) {
        self.call = call
        self.code = code
        self.detail = detail
    }

    /// True for errors meaning the peer went away (reset, broken pipe).
    public var isPeerGone: Bool { code == ECONNRESET || code == EPIPE || code == ECONNABORTED }

    public var description: String { "\(call): \(detail ?? String(cString: strerror(code)))" }
}
