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

    @Test func pacDirectTakesHostPatternsAndNamesABadOne() throws {
        #expect(LookoutConfiguration().pac.direct.isEmpty)
        let config = try load("pac:\n  direct: [\"intranet.test\", \"*.corp.test\", \"**.lan\", \"10.0.0.1\"]")
        #expect(config.pac.direct.map(\.text) == ["intranet.test", "*.corp.test", "**.lan", "10.0.0.1"])
        #expect(error("pac:\n  direct: [\"ok.test\", \"a*b.test\"]")?.contains("pac.direct[1]") == true)
        #expect(error("pac:\n  direct: \"intranet.test\"")?.contains("pac.direct") == true)
        #expect(error("pac:\n  hosts: []")?.contains("pac.hosts") == true)
    }

    @Test func adminAddressMustNotBeAProxyAddress() {
        #expect(error("listen: [\"127.0.0.1:8080\"]\nadmin:\n  listen: \"127.0.0.1:8080\"")?
            .contains("admin.listen: 127.0.0.1:8080 is also a proxy address (listen)") == true)
    }

    @Test func nonLoopbackAdminNeedsAccessClients() throws {
        #expect(error("admin:\n  listen: \"0.0.0.0:9090\"")?
            .contains("admin.listen on 0.0.0.0:9090 (not a loopback address) would open the admin pages to anyone") == true)
        let allowed = try load("admin:\n  listen: \"0.0.0.0:9090\"\n  token: \"abc\"\naccess:\n  clients: [\"10.0.0.0/8\"]")
        #expect(allowed.admin.listen.first?.host == "0.0.0.0")
    }

    @Test func adminReachableFromOtherMachinesNeedsAToken() throws {
        let needed = "admin.token: the admin pages on 0.0.0.0:8080 are reachable from other machines"
        #expect(error("listen: [\"0.0.0.0:8080\"]\naccess:\n  clients: [\"private\"]")?.contains(needed) == true)
        #expect(error("listen: [\"0.0.0.0:8080\"]\nauth:\n  users: [\"a:b\"]")?.contains(needed) == true)
        #expect(error("admin:\n  listen: \"0.0.0.0:9090\"\naccess:\n  clients: [\"loopback\", \"10.0.0.0/8\"]")?
            .contains("admin.token: the admin pages on 0.0.0.0:9090") == true)
        // Only loopback admitted: nobody else reaches the pages, so no token is needed.
        let loopbackOnly = try load("listen: [\"0.0.0.0:8080\"]\naccess:\n  clients: [\"loopback\", \"127.0.0.1/32\"]")
        #expect(loopbackOnly.admin.token == nil)
        let given = try load("listen: [\"0.0.0.0:8080\"]\naccess:\n  clients: [\"private\"]\nadmin:\n  token: \"s3cret-Token_1\"")
        #expect(given.admin.token == "s3cret-Token_1")
        #expect(try load("admin:\n  token: null").admin.token == nil)
    }

    @Test func aTokenIsABearerTokenAndNeverEchoed() {
        #expect(error("admin:\n  token: \"has space\"") ==
            "2:10 admin.token: may hold only letters, digits and - . _ ~ + / (then = padding), as a bearer token does (RFC 6750 §2.1)")
        #expect(error("admin:\n  token: \"\"")?.contains("admin.token: must not be empty") == true)
        #expect(error("admin:\n  token: [a]")?.contains("admin.token: must be a string") == true)
        #expect(LookoutConfiguration.Admin.tokenProblem("abc+/==") == nil)
        #expect(LookoutConfiguration.Admin.tokenProblem("==") != nil)
    }

    @Test func theEnvironmentOverridesTheFile() throws {
        let yaml = "listen: [\"0.0.0.0:8080\"]\naccess:\n  clients: [\"private\"]\nadmin:\n  token: \"from-file\""
        let config = try ConfigurationLoader.load(yaml: yaml, file: "test.yaml",
                                                  environment: ["LOOKOUT_ADMIN_TOKEN": "from-env"])
        #expect(config.admin.token == "from-env")
        let onlyEnv = try ConfigurationLoader.load(yaml: "listen: [\"0.0.0.0:8080\"]\naccess:\n  clients: [\"private\"]",
                                                   file: "test.yaml", environment: ["LOOKOUT_ADMIN_TOKEN": "e"])
        #expect(onlyEnv.admin.token == "e")
        #expect(throws: (any Error).self) {
            try ConfigurationLoader.load(yaml: "admin:\n  listen: []", file: "test.yaml",
                                         environment: ["LOOKOUT_ADMIN_TOKEN": "bad token"])
        }
        // An empty file (and no file at all, which is read as one) takes it too.
        let empty = try ConfigurationLoader.load(yaml: "", file: "built-in defaults",
                                                 environment: ["LOOKOUT_ADMIN_TOKEN": "e2"])
        #expect(empty.admin.token == "e2")
        #expect(throws: (any Error).self) {
            try ConfigurationLoader.load(yaml: "", file: "built-in defaults", environment: ["LOOKOUT_ADMIN_TOKEN": "a b"])
        }
    }
}
