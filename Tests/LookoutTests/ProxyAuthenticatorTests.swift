import HTTPTypes
import Testing
@testable import Lookout
@testable import LookoutModel

@Suite struct ProxyAuthenticatorTests {
    private func fields(_ value: String?) -> HTTPFields {
        var fields = HTTPFields()
        if let value { fields[.proxyAuthorization] = value }
        return fields
    }

    @Test func offWithoutCredentials() {
        #expect(ProxyAuthenticator(credentials: []) == nil)
    }

    @Test func acceptsOnlyListedPairs() throws {
        let auth = try #require(ProxyAuthenticator(credentials: ["alice:s3cret", "bob:a:b"]))
        #expect(auth.accepts(fields("Basic YWxpY2U6czNjcmV0")))      // alice:s3cret
        #expect(auth.accepts(fields("basic   Ym9iOmE6Yg==")))        // bob:a:b, scheme is case-insensitive
        #expect(!auth.accepts(fields("Basic YWxpY2U6d3Jvbmc=")))     // alice:wrong
        #expect(!auth.accepts(fields("Bearer YWxpY2U6czNjcmV0")))
        #expect(!auth.accepts(fields("Basic")))
        #expect(!auth.accepts(fields(nil)))
    }
}
