import LookoutIO
import LookoutModel
import LookoutTLS
import Testing
@testable import LookoutUpstream

/// The values the upstream side routes by: origins (the pool's key), parent proxies and the
/// destination rules checked on every hop.
@Suite struct UpstreamValueTests {
    @Test func anOriginNamesItselfAsClientsAndHostFieldsDo() {
        let plain = Origin(host: "example.com", port: 80)
        #expect(plain.authority == "example.com:80")
        #expect(plain.hostFieldValue == "example.com", "RFC 9110 §7.2: the default port is left out")
        #expect(plain.url(path: "/a?b") == "http://example.com/a?b")
        let secure = Origin(host: "::1", port: 8443, isSecure: true)
        #expect(secure.authority == "[::1]:8443")
        #expect(secure.hostFieldValue == "[::1]:8443")
        #expect(secure.url(path: "/") == "https://[::1]:8443/")
    }

    @Test func thePoolKeyIsSchemeHostPortAndParent() {
        let parent = ParentProxy(host: "proxy.example", port: 3128)
        let direct = Origin(host: "api.example", port: 443, isSecure: true)
        #expect(direct == Origin(host: "api.example", port: 443, isSecure: true, ruleKey: HostRuleKey("other")))
        #expect(direct != Origin(host: "api.example", port: 443, isSecure: false))
        #expect(direct != Origin(host: "api.example", port: 443, isSecure: true, parent: parent))
        // Every plain request through a parent shares the parent's connections, which are never
        // mixed up with connections made to the same host as an origin.
        let hop = Origin.parentHop(parent)
        #expect(hop.host == "proxy.example" && hop.port == 3128 && hop.parent == parent)
        #expect(hop != Origin(host: "proxy.example", port: 3128))
    }

    @Test func aParentProxyCarriesItsCredentialsButNeverShowsThem() {
        let parent = ParentProxy(host: "proxy.example", port: 3128, user: "alice", password: "s3cret")
        #expect(parent.authorization == "Basic YWxpY2U6czNjcmV0")
        #expect(parent.description == "http://proxy.example:3128")
        #expect(ParentProxy(host: "::1", port: 3128).description == "http://[::1]:3128")
    }

    @Test func destinationRulesRefuseHostsAndNetworks() throws {
        var access = AccessPolicy()
        access.denyHosts = HostRuleSet([([try HostPattern("**.ads.example")], "**.ads.example")])
        access.denyNetworks = IPNetwork.named("loopback")!
        #expect(access.refusal(forHost: HostRuleKey("x.ads.example"))?.code == "destination_denied")
        #expect(access.refusal(forHost: HostRuleKey("example.org")) == nil)
        let loopback = try #require(SocketAddress(ip: "127.0.0.1", port: 80))
        let other = try #require(SocketAddress(ip: "192.0.2.1", port: 80))
        #expect(access.deniedNetwork(for: loopback) != nil)
        #expect(access.deniedNetwork(for: other) == nil)
    }
}
