import Testing
@testable import LookoutConfig

/// `listen` entries as `{address, mode}` mappings beside plain strings.
struct ListenModeConfigTests {
    @Test func mappingsNameTheirMode() throws {
        let config = try load("""
            listen: ["127.0.0.1:8080", {address: "127.0.0.1:8081", mode: transparent}, {address: "[::1]:1080", mode: socks5},
                     {address: "127.0.0.1:8082"}]
            """)
        #expect(config.listen.map(\.description) == ["127.0.0.1:8080", "127.0.0.1:8081", "[::1]:1080", "127.0.0.1:8082"])
        #expect(config.listen.map(\.mode) == [.proxy, .transparent, .socks5, .proxy])
    }

    @Test func badMappingsNameTheField() {
        #expect(error("listen: [{address: \"127.0.0.1:8081\", mode: tproxy}]")
            == "1:44 listen[0].mode: expected proxy, transparent, socks5, got \"tproxy\"")
        #expect(error("listen: [{mode: socks5}]") == "1:10 listen[0].address: a listen mapping needs address (\"host:port\")")
        #expect(error("listen: [{address: \"example.com:1\", mode: socks5}]")
            == "1:20 listen[0].address: host \"example.com\" must be an IPv4 or IPv6 address or \"localhost\"")
        #expect(error("listen: [{address: \"127.0.0.1:1\", port: 2}]")?.hasPrefix("1:35 listen[0].port: unknown key") == true)
        #expect(error("listen: [{address: \"127.0.0.1:1\", mode: socks5, tls: {cert: a, key: b}}]")?
            .contains("tls is for proxy listeners (mode: proxy), not socks5") == true)
        #expect(error("listen: [{address: \"127.0.0.1:1\", tls: {cert: /nonexistent.pem}}]")?
            .contains("a TLS listener needs cert and key") == true)
        #expect(error("listen: [\"127.0.0.1:9000\", {address: \"127.0.0.1:9000\", mode: socks5}]")
            == "1:28 listen[1]: 127.0.0.1:9000 is listed twice (first on line 1)")
    }

    @Test func onlyProxyListenersExposeTheAdminPages() throws {
        // A transparent listener on every address serves no admin page: no token is asked for.
        let config = try load("""
            listen: ["127.0.0.1:8080", {address: "0.0.0.0:8081", mode: transparent}]
            access:
              clients: ["10.0.0.0/8"]
            """)
        #expect(config.listen[1].mode == .transparent)
        // Still no open relay: without access.clients or auth.users it is refused.
        #expect(error("listen: [{address: \"0.0.0.0:1080\", mode: socks5}]")?.contains("open proxy") == true)
    }
}
