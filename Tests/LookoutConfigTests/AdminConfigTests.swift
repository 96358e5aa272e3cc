import Testing
@testable import LookoutConfig

@Suite struct AdminConfigTests {
    @Test func defaultsServeMetricsOnTheProxyAddressOnly() {
        let config = LookoutConfiguration()
        #expect(config.admin.listen.isEmpty)
        #expect(config.metrics.enabled && config.metrics.hostLabels.isEmpty)
    }

    @Test func readsTheIssueShape() throws {
        let config = try load("""
        admin:
          listen: "127.0.0.1:9090"
        metrics:
          enabled: true
          host_labels: ["api.example.com", "*.cdn.example.net"]
        """)
        #expect(config.admin.listen == [ListenAddress(host: "127.0.0.1", port: 9090)])
        #expect(config.metrics.hostLabels.map(\.text) == ["api.example.com", "*.cdn.example.net"])
    }

    @Test func adminListenTakesAListToo() throws {
        let config = try load("admin:\n  listen: [\"127.0.0.1:9090\", \"[::1]:9090\"]\nmetrics:\n  enabled: false")
        #expect(config.admin.listen.map(\.description) == ["127.0.0.1:9090", "[::1]:9090"])
        #expect(!config.metrics.enabled)
    }

    @Test func errorsNameTheKey() {
        #expect(error("admin:\n  listen: \"127.0.0.1:99999\"")?.contains("admin.listen[0]") == true)
        #expect(error("admin:\n  listen: 9090")?.contains("admin.listen[0]") == true)
        #expect(error("admin:\n  listn: \"127.0.0.1:9090\"")?.contains("admin.listn") == true)
        #expect(error("metrics:\n  enabled: sometimes") == "2:12 metrics.enabled: expected true or false, got \"sometimes\"")
        #expect(error("metrics:\n  host_labels: [\"a.*.com\"]")?.contains("metrics.host_labels[0]") == true)
        #expect(error("metrics:\n  host_labels: \"api.example.com\"")?.contains("metrics.host_labels") == true)
    }

    @Test func adminAddressMustNotBeAProxyAddress() {
        #expect(error("listen: [\"127.0.0.1:8080\"]\nadmin:\n  listen: \"127.0.0.1:8080\"")?
            .contains("admin.listen: 127.0.0.1:8080 is also a proxy address (listen)") == true)
    }

    @Test func nonLoopbackAdminNeedsAccessClients() throws {
        #expect(error("admin:\n  listen: \"0.0.0.0:9090\"")?
            .contains("admin.listen on 0.0.0.0:9090 (not a loopback address) would open the admin pages to anyone") == true)
        let allowed = try load("admin:\n  listen: \"0.0.0.0:9090\"\naccess:\n  clients: [\"10.0.0.0/8\"]")
        #expect(allowed.admin.listen.first?.host == "0.0.0.0")
    }
}
