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
}
