import CLookoutSocket
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the socket system calls; everything above speaks Swift.
enum Socket {
    static func makeNonBlocking(family: Int32) throws(SocketError) -> Int32 {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        return fd
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var v = value
        _ = setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Disables Nagle: the proxy writes whole heads and bodies and must not wait for ACKs.
    static func setNoDelay(_ fd: Int32) {
        setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? SocketAddress(storage: storage, length: length) : nil
    }

    static func peerAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        return rc == 0 ? SocketAddress(storage: storage, length: length) : nil
    }

    /// The pending error of a socket (SO_ERROR), used to learn how a nonblocking connect ended.
    static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)
        return value
    }

    /// Bytes the peer has not acknowledged yet (sent or still queued in the kernel); 0 on error,
    /// when there is nothing left to wait for.
    static func unacknowledgedByteCount(_ fd: Int32) -> Int {
        max(0, Int(lookout_unacknowledged_byte_count(fd)))
    }

    /// Closes with an RST instead of a FIN, so a peer mid-transfer learns the data is incomplete.
    static func abortiveClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }
}
