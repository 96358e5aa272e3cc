#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import LookoutIO

@Suite struct SocketAddressTests {
    /// Listeners bound to a wildcard cannot tell an accepted connection's local address; the
    /// others hand theirs on instead of asking the kernel per connection.
    @Test func wildcardAddressesAreUnspecified() throws {
        for wildcard in ["0.0.0.0", "::"] {
            #expect(try #require(SocketAddress(ip: wildcard, port: 8080)).isUnspecified, "\(wildcard)")
        }
        for specific in ["127.0.0.1", "::1", "10.0.0.1", "0.0.0.1", "::ffff:0.0.0.0", "fe80::"] {
            #expect(try !#require(SocketAddress(ip: specific, port: 0)).isUnspecified, "\(specific)")
        }
    }

    @Test("IPv4 and IPv6 addresses keep their family, port and text in a sockaddr_in6's room")
    func addressesRoundTrip() throws {
        let v4 = try #require(SocketAddress(ip: "192.0.2.7", port: 8443))
        #expect(v4.family == AF_INET && v4.port == 8443 && v4.description == "192.0.2.7:8443")
        #expect(v4.length == socklen_t(MemoryLayout<sockaddr_in>.size))
        let v6 = try #require(SocketAddress(ip: "2001:db8::1", port: 65535))
        #expect(v6.family == AF_INET6 && v6.port == 65535 && v6.description == "[2001:db8::1]:65535")
        #expect(v6.length == socklen_t(MemoryLayout<sockaddr_in6>.size))
        #expect(v4 == SocketAddress(ip: "192.0.2.7", port: 8443) && v4 != SocketAddress(ip: "192.0.2.7", port: 8444))
        #expect(Set([v4, v6, v4]).count == 2)
        // The kernel's generic storage, as accept() fills it, with its full size given: only the
        // address's own bytes are kept, and the address reads the same.
        var storage = sockaddr_storage()
        v6.withSockAddr { pointer, length in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: Int(length))) }
        }
        let wide = SocketAddress(storage: storage, length: socklen_t(MemoryLayout<sockaddr_storage>.size))
        #expect(wide.length == socklen_t(MemoryLayout<sockaddr_in6>.size) && wide == v6 && wide.ipText == "2001:db8::1")
    }
}
