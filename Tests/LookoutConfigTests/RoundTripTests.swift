import Foundation
import Testing
@testable import LookoutConfig

/// A configuration with every value different from its default.
func everyValueChanged() -> LookoutConfiguration {
    var c = LookoutConfiguration(homeDirectory: testHome)
    c.listen = [
        ListenAddress(host: "127.0.0.1", port: 3128),
        ListenAddress(host: "::1", port: 3129),
        ListenAddress(host: "127.0.0.2", port: 0),
    ]
    c.stateDirectory = "/var/lib/lookout"
    c.eventLoops = 3
    c.eventLoopSpinMicroseconds = 7
    c.maxConnections = 100
    c.limits = .init(maxRequestLineBytes: 1024, maxHeaderBytes: 4096, maxHeaderCount: 16,
                     maxRequestBodyBytes: 1_048_576)
    c.timeouts = .init(clientHeader: 1.5, clientIdle: 2, upstreamConnect: 0.25,
                       upstreamFirstByte: 4, upstreamIdle: 5.75, shutdownGrace: 0.001)
    c.connect = .init(allowedPorts: [443, 8443, 1, 65535])
    c.pool = .init(maxIdlePerOrigin: 0, idleTimeout: 12.5)
    c.dns = .init(cacheTTL: 0)
    c.headers = .init(via: false)
    c.log = .init(enabled: false, path: "/var/log/lookout.jsonl", verbose: true, revealSecrets: true,
                  includeHeaders: true, queueLimit: 1)
    return c
}

/// `configuration` written as a config file (block style), for round trips.
func yaml(for c: LookoutConfiguration) -> String {
    func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
    return """
        listen:
        \(c.listen.map { "  - \"\($0)\"" }.joined(separator: "\n"))
        state_dir: \(c.stateDirectory)
        event_loops: \(c.eventLoops)
        event_loop_spin_us: \(c.eventLoopSpinMicroseconds)
        max_connections: \(c.maxConnections)
        limits:
          max_request_line_bytes: \(c.limits.maxRequestLineBytes)
          max_header_bytes: \(c.limits.maxHeaderBytes)
          max_header_count: \(c.limits.maxHeaderCount)
          max_request_body_bytes: \(c.limits.maxRequestBodyBytes)
        timeouts:
          client_header: \(number(c.timeouts.clientHeader))
          client_idle: \(number(c.timeouts.clientIdle))
          upstream_connect: \(number(c.timeouts.upstreamConnect))
          upstream_first_byte: \(number(c.timeouts.upstreamFirstByte))
          upstream_idle: \(number(c.timeouts.upstreamIdle))
          shutdown_grace: \(number(c.timeouts.shutdownGrace))
        connect:
          allowed_ports: [\(c.connect.allowedPorts.map(String.init).joined(separator: ", "))]
        pool:
          max_idle_per_origin: \(c.pool.maxIdlePerOrigin)
          idle_timeout: \(number(c.pool.idleTimeout))
        dns:
          cache_ttl: \(number(c.dns.cacheTTL))
        headers:
          via: \(c.headers.via)
        log:
          enabled: \(c.log.enabled)
          path: "\(c.log.path)"
          verbose: \(c.log.verbose)
          reveal_secrets: \(c.log.revealSecrets)
          include_headers: \(c.log.includeHeaders)
          queue_limit: \(c.log.queueLimit)

        """
}

/// The defaults with one change.
func changed(_ change: (inout LookoutConfiguration) -> Void) -> LookoutConfiguration {
    var configuration = defaults
    change(&configuration)
    return configuration
}

@Suite("Every key round-trips")
struct RoundTripTests {
    @Test("a file setting every key gives exactly those values")
    func everyKeyByHand() throws {
        let yaml = """
            # every key, none at its default
            listen:
              - 127.0.0.1:3128
              - "[::1]:3129"
              - '127.0.0.2:0'
            state_dir: /var/lib/lookout
            event_loops: 3
            event_loop_spin_us: 7
            max_connections: 100
            limits:
              max_request_line_bytes: 1024
              max_header_bytes: 4096
              max_header_count: 16
              max_request_body_bytes: 1048576
            timeouts:
              client_header: 1.5
              client_idle: 2
              upstream_connect: 0.25
              upstream_first_byte: 4.0
              upstream_idle: 5.75
              shutdown_grace: 1e-3
            connect:
              allowed_ports: [443, 8443, 1, 65535]
            pool:
              max_idle_per_origin: 0
              idle_timeout: 12.5
            dns:
              cache_ttl: 0
            headers:
              via: false
            log:
              enabled: false
              path: /var/log/lookout.jsonl
              verbose: true
              reveal_secrets: True
              include_headers: TRUE
              queue_limit: 1
            """
        let loaded = try load(yaml)
        let expected = everyValueChanged()
        // Field by field first, so a failure names the field.
        #expect(loaded.listen == expected.listen)
        #expect(loaded.stateDirectory == expected.stateDirectory)
        #expect(loaded.eventLoops == expected.eventLoops)
        #expect(loaded.maxConnections == expected.maxConnections)
        #expect(loaded.limits == expected.limits)
        #expect(loaded.timeouts == expected.timeouts)
        #expect(loaded.connect == expected.connect)
        #expect(loaded.pool == expected.pool)
        #expect(loaded.dns == expected.dns)
        #expect(loaded.headers == expected.headers)
        #expect(loaded.log == expected.log)
        #expect(loaded == expected)
    }

    @Test("a configuration written as YAML loads back equal")
    func generatedRoundTrip() throws {
        let configuration = everyValueChanged()
        #expect(try load(yaml(for: configuration)) == configuration)
        #expect(try load(yaml(for: defaults)) == defaults)
    }

    @Test("flow style, quoted keys and anchors read the same as block style")
    func flowStyle() throws {
        let yaml = """
            {listen: ["127.0.0.1:3128", "[::1]:3129", "127.0.0.2:0"], state_dir: "/var/lib/lookout",
             "event_loops": 3, event_loop_spin_us: 7, max_connections: 100,
             limits: {max_request_line_bytes: 1024, max_header_bytes: 4096, max_header_count: 16,
                      max_request_body_bytes: 1048576},
             timeouts: {client_header: 1.5, client_idle: 2, upstream_connect: 0.25, upstream_first_byte: 4,
                        upstream_idle: 5.75, shutdown_grace: 0.001},
             connect: {allowed_ports: [443, 8443, 1, 65535]}, pool: {max_idle_per_origin: 0, idle_timeout: 12.5},
             dns: {cache_ttl: 0}, headers: {via: false},
             log: {enabled: false, path: /var/log/lookout.jsonl, verbose: true, reveal_secrets: true, include_headers: true,
                   queue_limit: 1}}
            """
        #expect(try load(yaml) == everyValueChanged())
    }

    @Test("each key alone changes only its own field", arguments: [
        ("event_loops: 256", changed { c in c.eventLoops = 256 }),
        ("event_loop_spin_us: 0", changed { c in c.eventLoopSpinMicroseconds = 0 }),
        ("event_loop_spin_us: 1000", changed { c in c.eventLoopSpinMicroseconds = 1000 }),
        ("max_connections: 1", changed { c in c.maxConnections = 1 }),
        ("limits: {max_request_line_bytes: 1}", changed { c in c.limits.maxRequestLineBytes = 1 }),
        ("limits: {max_header_bytes: 2}", changed { c in c.limits.maxHeaderBytes = 2 }),
        ("limits: {max_header_count: 3}", changed { c in c.limits.maxHeaderCount = 3 }),
        ("limits: {max_request_body_bytes: 4}", changed { c in c.limits.maxRequestBodyBytes = 4 }),
        ("timeouts: {client_header: 5}", changed { c in c.timeouts.clientHeader = 5 }),
        ("timeouts: {client_idle: 6}", changed { c in c.timeouts.clientIdle = 6 }),
        ("timeouts: {upstream_connect: 7}", changed { c in c.timeouts.upstreamConnect = 7 }),
        ("timeouts: {upstream_first_byte: 8}", changed { c in c.timeouts.upstreamFirstByte = 8 }),
        ("timeouts: {upstream_idle: 9}", changed { c in c.timeouts.upstreamIdle = 9 }),
        ("timeouts: {shutdown_grace: 31536000}", changed { c in c.timeouts.shutdownGrace = 31_536_000 }),
        ("connect: {allowed_ports: []}", changed { c in c.connect.allowedPorts = [] }),
        ("pool: {max_idle_per_origin: 11}", changed { c in c.pool.maxIdlePerOrigin = 11 }),
        ("pool: {idle_timeout: 12}", changed { c in c.pool.idleTimeout = 12 }),
        ("dns: {cache_ttl: 13.5}", changed { c in c.dns.cacheTTL = 13.5 }),
        ("headers: {via: false}", changed { c in c.headers.via = false }),
        ("log: {path: out.log}", changed { c in c.log.path = "out.log" }),
        ("log: {verbose: true}", changed { c in c.log.verbose = true }),
        ("log: {reveal_secrets: true}", changed { c in c.log.revealSecrets = true }),
        ("log: {include_headers: true}", changed { c in c.log.includeHeaders = true }),
        ("log: {enabled: false}", changed { c in c.log.enabled = false }),
        ("log: {queue_limit: 14}", changed { c in c.log.queueLimit = 14 }),
        ("state_dir: relative/state", changed { c in c.stateDirectory = "relative/state" }),
        ("listen: [\"127.0.0.1:0\"]", changed { c in c.listen = [.init(host: "127.0.0.1", port: 0)] }),
    ])
    func singleKey(yaml: String, expected: LookoutConfiguration) throws {
        #expect(try load(yaml) == expected)
    }

    @Test("listen: localhost is 127.0.0.1, IPv6 loses its brackets, port 0 is allowed")
    func listenForms() throws {
        let loaded = try load("""
            listen: ["localhost:8080", "LOCALHOST:1", "[::1]:8080", "[::]:0", "0.0.0.0:65535", "[fe80::1:2]:9"]
            access:
              clients: ["10.0.0.0/8"]
            admin:
              token: "t0ken"
            """)
        #expect(loaded.listen == [
            ListenAddress(host: "127.0.0.1", port: 8080),
            ListenAddress(host: "127.0.0.1", port: 1),
            ListenAddress(host: "::1", port: 8080),
            ListenAddress(host: "::", port: 0),
            ListenAddress(host: "0.0.0.0", port: 65535),
            ListenAddress(host: "fe80::1:2", port: 9),
        ])
        #expect(loaded.listen.map(\.description) == [
            "127.0.0.1:8080", "127.0.0.1:1", "[::1]:8080", "[::]:0", "0.0.0.0:65535", "[fe80::1:2]:9",
        ])
    }

    @Test("a non-loopback listener needs access.clients or auth.users (never an open proxy by accident)")
    func openProxyIsRefused() throws {
        #expect(throws: (any Error).self) { try load("listen: [\"0.0.0.0:8080\"]\n") }
        #expect(throws: (any Error).self) { try load("listen: [\"[::]:8080\"]\n") }
        _ = try load("listen: [\"0.0.0.0:8080\"]\nauth:\n  users: [\"a:b\"]\nadmin:\n  token: \"t\"\n")
        _ = try load("listen: [\"0.0.0.0:8080\"]\naccess:\n  clients: [\"private\"]\nadmin:\n  token: \"t\"\n")
        _ = try load("listen: [\"127.0.0.2:8080\", \"[::1]:1\", \"localhost:2\"]\n")
    }

    @Test("access: CIDRs, names, host patterns and methods")
    func accessSection() throws {
        let loaded = try load("""
            access:
              clients: ["127.0.0.0/8", "::1/128", "loopback"]
              allow_hosts: ["**.example.com"]
              deny_hosts: ["**.ads.example"]
              deny_networks: ["private", "169.254.169.254"]
              methods: [GET, HEAD]
            """)
        #expect(loaded.access.clients.map(\.description) == ["127.0.0.0/8", "::1/128", "loopback", "loopback", "loopback", "loopback"])
        #expect(loaded.access.allowHosts.map(\.text) == ["**.example.com"])
        #expect(loaded.access.denyHosts.map(\.text) == ["**.ads.example"])
        #expect(loaded.access.denyNetworks.count == 5)
        #expect(loaded.access.methods == ["GET", "HEAD"])
        #expect(throws: (any Error).self) { try load("access:\n  clients: [\"10.0.0.1/8\"]\n") }  // host bits set
        #expect(throws: (any Error).self) { try load("access:\n  deny_networks: [\"intranet\"]\n") }
        #expect(throws: (any Error).self) { try load("access:\n  methods: [get]\n") }
    }

    @Test("port 0 may be listed more than once (the kernel picks different ports)")
    func listenPortZeroTwice() throws {
        let loaded = try load("listen: [\"127.0.0.1:0\", \"127.0.0.1:0\"]")
        #expect(loaded.listen.count == 2)
    }

    @Test("~ is expanded in state_dir and log.path", arguments: [
        ("state_dir: \"~\"", \LookoutConfiguration.stateDirectory, "/home/tester"),
        ("state_dir: ~/", \LookoutConfiguration.stateDirectory, "/home/tester/"),
        ("state_dir: ~/.lookout-test", \LookoutConfiguration.stateDirectory, "/home/tester/.lookout-test"),
        ("state_dir: \"~/quoted\"", \LookoutConfiguration.stateDirectory, "/home/tester/quoted"),
        ("state_dir: /abs/~/x", \LookoutConfiguration.stateDirectory, "/abs/~/x"),
        ("log: {path: ~/lookout.log}", \LookoutConfiguration.log.path, "/home/tester/lookout.log"),
        ("log: {path: \"-\"}", \LookoutConfiguration.log.path, "-"),
        ("log: {path: -}", \LookoutConfiguration.log.path, "-"),
    ] as [(String, KeyPath<LookoutConfiguration, String> & Sendable, String)])
    func tildeExpansion(yaml: String, field: KeyPath<LookoutConfiguration, String> & Sendable, expected: String) throws {
        #expect(try load(yaml)[keyPath: field] == expected)
    }

    @Test("~ expands against the environment passed in")
    func tildeUsesEnvironment() throws {
        let loaded = try ConfigurationLoader.load(
            yaml: "state_dir: ~/s", file: "x.yaml", environment: ["HOME": "/elsewhere"])
        #expect(loaded.stateDirectory == "/elsewhere/s")
        #expect(ConfigurationLoader.expandTilde("~/a", home: nil) == nil)
        #expect(ConfigurationLoader.expandTilde("/a", home: nil) == "/a")
    }

    @Test("numbers: signs, exponents, decimals; anchors and aliases")
    func numberForms() throws {
        let loaded = try load("""
            max_connections: +12
            timeouts:
              client_header: &short 2.5e0
              client_idle: *short
              upstream_connect: .5
              upstream_first_byte: 7.
            """)
        #expect(loaded.maxConnections == 12)
        #expect(loaded.timeouts.clientHeader == 2.5)
        #expect(loaded.timeouts.clientIdle == 2.5)
        #expect(loaded.timeouts.upstreamConnect == 0.5)
        #expect(loaded.timeouts.upstreamFirstByte == 7)
    }

    @Test("CRLF line endings and a byte-order mark are read")
    func lineEndings() throws {
        let loaded = try load("\u{FEFF}event_loops: 2\r\nlog:\r\n  verbose: true\r\n")
        #expect(loaded.eventLoops == 2)
        #expect(loaded.log.verbose)
    }

    @Test("load(contentsOf:) reads a file")
    func loadFromFile() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("lookout.yaml")
        try yaml(for: everyValueChanged()).write(to: file, atomically: true, encoding: .utf8)
        #expect(try ConfigurationLoader.load(contentsOf: file.path, environment: testEnvironment)
            == everyValueChanged())
    }
}

/// `upstream_proxies` URLs.
@Suite struct ParentProxySettingTests {
    @Test func urlsAreParsedWithCredentialsPortsAndIPv6() throws {
        #expect(try ParentProxySetting.parse("direct").get() == .direct)
        #expect(try ParentProxySetting.parse("http://Proxy.Corp.Example:3128").get()
                == .proxy(host: "proxy.corp.example", port: 3128, user: nil, password: nil))
        #expect(try ParentProxySetting.parse("http://u%40x:p%3Aw@10.0.0.1/").get()
                == .proxy(host: "10.0.0.1", port: 80, user: "u@x", password: "p:w"))
        #expect(try ParentProxySetting.parse("http://[fd00::1]:8080").get()
                == .proxy(host: "fd00::1", port: 8080, user: nil, password: nil))
        #expect(try ParentProxySetting.parse("socks5://127.0.0.1").get()
                == .socks(host: "127.0.0.1", port: 1080, user: nil, password: nil, remoteNames: false))
        #expect(try ParentProxySetting.parse("socks5h://u:p@[::1]:9050").get()
                == .socks(host: "::1", port: 9050, user: "u", password: "p", remoteNames: true))
        for bad in ["https://p:1", "socks4://p:1", "socks5://u@p:1", "http://:3128", "http://p:0", "http://p:x", "http://p/x", "http://u%zz@p:1", "http://[fd00::1"] {
            if case .success = ParentProxySetting.parse(bad) { Issue.record("\(bad) was accepted") }
        }
    }
}
