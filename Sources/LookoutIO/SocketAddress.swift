#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 socket address, stored the way the kernel wants it.
///
/// Kept in a `sockaddr_in6`, the largest address a TCP socket has, not a `sockaddr_storage`:
/// every connection holds its peer's and its own address, and the storage's 128 bytes made up
/// about a tenth of an idle connection's memory.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address; only the first `length` bytes are meaningful (a `sockaddr_in` for IPv4).
    let raw: sockaddr_in6
    /// How many bytes of the address are meaningful (`sockaddr_in` or `sockaddr_in6`).
    public let length: socklen_t

    /// Wraps an address the kernel filled in: an IPv4 or IPv6 one, as `accept`, `getpeername`
    /// and `getaddrinfo` give for TCP (a longer one is cut to `sockaddr_in6`'s size).
    public init(storage: sockaddr_storage, length: socklen_t) {
        var raw = sockaddr_in6()
        let kept = min(Int(length), MemoryLayout<sockaddr_in6>.size)
        withUnsafeBytes(of: storage) { src in
            withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: src.prefix(kept))) }
        }
        self.raw = raw
        self.length = socklen_t(kept)
    }

    /// Makes an address from an IP literal ("127.0.0.1", "::1") and a port; nil if `ip` is not a literal.
    public init?(ip: String, port: Int) {
        var storage = sockaddr_storage()
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, ip, &v4) == 1 {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(UInt16(port).bigEndian)
            sin.sin_addr = v4
            withUnsafeBytes(of: &sin) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        } else if inet_pton(AF_INET6, ip, &v6) == 1 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = in_port_t(UInt16(port).bigEndian)
            sin6.sin6_addr = v6
            withUnsafeBytes(of: &sin6) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            return nil
        }
    }

    /// The local address of the socket `fd` (getsockname), or nil.
    public static func local(of fd: Int32) -> SocketAddress? { Socket.localAddress(fd) }

    /// AF_INET or AF_INET6.
    public var family: Int32 { Int32(raw.sin6_family) }

    /// The port in host byte order.
    public var port: Int {
        withUnsafeBytes(of: raw) { bytes in
            // sin_port and sin6_port sit at the same offset, right after the family.
            let port = bytes.load(fromByteOffset: MemoryLayout<sa_family_t>.size, as: UInt16.self)
            return Int(UInt16(bigEndian: port))
        }
    }

    /// The wildcard address ("0.0.0.0" or "::") a listener binds to for every interface.
    public var isUnspecified: Bool {
        withUnsafeBytes(of: raw) { bytes in
            let address = family == AF_INET ? bytes[4..<8] : bytes[8..<24]
            return !address.contains { $0 != 0 }
        }
    }

    /// The address's bytes in network order: 4 for IPv4, 16 for IPv6.
    public var addressBytes: [UInt8] {
        withUnsafeBytes(of: raw) { bytes in Array(family == AF_INET ? bytes[4..<8] : bytes[8..<24]) }
    }

    /// The IP address as text, without brackets.
    public var ipText: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        return withUnsafeBytes(of: raw) { bytes -> String in
            if family == AF_INET {
                var addr = bytes.load(fromByteOffset: 4, as: in_addr.self)
                inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
            } else {
                var addr = bytes.load(fromByteOffset: 8, as: in6_addr.self)
                inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
            }
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// "127.0.0.1:8080" or "[::1]:8080".
    public var description: String {
        family == AF_INET6 ? "[\(ipText)]:\(port)" : "\(ipText):\(port)"
    }

    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        guard lhs.length == rhs.length else { return false }
        return withUnsafeBytes(of: lhs.raw) { lb in
            withUnsafeBytes(of: rhs.raw) { rb in memcmp(lb.baseAddress!, rb.baseAddress!, Int(lhs.length)) == 0 }
        }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: raw) { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(Int(length)))) }
    }

    /// Calls `body` with the address as a `sockaddr` pointer for the kernel.
    public func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        return withUnsafePointer(to: raw) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
