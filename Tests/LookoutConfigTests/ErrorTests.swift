import Foundation
import Testing
@testable import LookoutConfig

@Suite("Unknown keys")
struct UnknownKeyTests {
    @Test("an unknown top-level key close to a known one gets a suggestion")
    func topLevelSuggestion() {
        #expect(error("timeout:\n  client_header: 5\n")
            == "1:1 timeout: unknown key 'timeout'; did you mean 'timeouts'?")
    }

    @Test("an unknown nested key with nothing close is just unknown")
    func nestedUnknown() {
        #expect(error("timeouts:\n  bogus: 5\n") == "2:3 timeouts.bogus: unknown key")
    }

    @Test("suggestions", arguments: [
        ("listn: []", "1:1 listn: unknown key 'listn'; did you mean 'listen'?"),
        ("Timeouts: {}", "1:1 Timeouts: unknown key 'Timeouts'; did you mean 'timeouts'?"),
        ("state-dir: /x", "1:1 state-dir: unknown key 'state-dir'; did you mean 'state_dir'?"),
        ("eventloops: 1", "1:1 eventloops: unknown key 'eventloops'; did you mean 'event_loops'?"),
        ("timeouts:\n  client-header: 5", "2:3 timeouts.client-header: unknown key 'client-header'; did you mean 'client_header'?"),
        ("timeouts:\n  upstream_conect: 5", "2:3 timeouts.upstream_conect: unknown key 'upstream_conect'; did you mean 'upstream_connect'?"),
        ("log:\n  verbos: true", "2:3 log.verbos: unknown key 'verbos'; did you mean 'verbose'?"),
        ("log:\n  queue_limits: 3", "2:3 log.queue_limits: unknown key 'queue_limits'; did you mean 'queue_limit'?"),
        ("connect:\n  allowed_port: [1]", "2:3 connect.allowed_port: unknown key 'allowed_port'; did you mean 'allowed_ports'?"),
        ("dns:\n  ttl: 3", "2:3 dns.ttl: unknown key"),
        // more than two edits away: no suggestion
        ("tmeouts_x: {}", "1:1 tmeouts_x: unknown key"),
        // a one-letter key is never "close" to anything
        ("x: 1", "1:1 x: unknown key"),
        // the right key in the wrong section
        ("via: false", "1:1 via: unknown key 'via'; did you mean 'headers.via'?"),
        ("client_header: 3", "1:1 client_header: unknown key 'client_header'; did you mean 'timeouts.client_header'?"),
        ("log:\n  cache_ttl: 3", "2:3 log.cache_ttl: unknown key 'cache_ttl'; did you mean 'dns.cache_ttl'?"),
        ("headers:\n  listen: []", "2:3 headers.listen: unknown key 'listen'; 'listen' belongs at the top level"),
        // the Swift name is not the YAML name, but close enough for a suggestion
        ("maxConnections: 3", "1:1 maxConnections: unknown key 'maxConnections'; did you mean 'max_connections'?"),
        ("log:\n  queueLimit: 3", "2:3 log.queueLimit: unknown key 'queueLimit'; did you mean 'queue_limit'?"),
    ])
    func suggestions(yaml: String, expected: String) {
        #expect(error(yaml) == expected)
    }

    @Test("an unknown key renders as PATH:LINE:COL: KEY: message with a suggestion")
    func specExample() throws {
        do {
            _ = try ConfigurationLoader.load(yaml: "log:\n  verbose: true\ntimeouts:\n  bogus: 1\n", file: "x.yaml")
            Issue.record("loaded")
        } catch {
            #expect(error.description == "x.yaml:4:3: timeouts.bogus: unknown key")
        }
    }

    @Test("unknown keys are reported inside every section")
    func everySection() {
        let yaml = """
            limits: {nope: 1}
            timeouts: {nope: 1}
            connect: {nope: 1}
            pool: {nope: 1}
            dns: {nope: 1}
            headers: {nope: 1}
            log: {nope: 1}
            """
        #expect(errors(yaml) == [
            "1:10 limits.nope: unknown key",
            "2:12 timeouts.nope: unknown key",
            "3:11 connect.nope: unknown key",
            "4:8 pool.nope: unknown key",
            "5:7 dns.nope: unknown key",
            "6:11 headers.nope: unknown key",
            "7:7 log.nope: unknown key",
        ])
    }

    @Test("a key that is not a name")
    func nonScalarKey() {
        #expect(error("? [a, b]\n: 1\n") == "1:3 : expected a key name, got a list")
        #expect(error("log:\n  ? {a: 1}\n  : 2\n") == "2:5 log: expected a key name, got a mapping")
    }

    @Test("closestKey and editDistance")
    func distance() {
        func d(_ a: String, _ b: String) -> Int {
            editDistance(Array(a.unicodeScalars), Array(b.unicodeScalars))
        }
        #expect(d("", "") == 0)
        #expect(d("abc", "") == 3)
        #expect(d("", "ab") == 2)
        #expect(d("kitten", "sitting") == 3)
        #expect(d("timeout", "timeouts") == 1)
        #expect(closestKey(to: "pth", among: ["path", "verbose"]) == "path")
        #expect(closestKey(to: "zzzz", among: ["path", "verbose"]) == nil)
        // ties go to the first in schema order
        #expect(closestKey(to: "ab", among: ["abc", "abd"]) == "abc")
    }
}

@Suite("Type errors")
struct TypeErrorTests {
    @Test("type errors name what was expected and what was found", arguments: [
        ("timeouts:\n  client_header: soon", "2:18 timeouts.client_header: expected a number of seconds, got \"soon\""),
        ("timeouts:\n  client_header: 30s", "2:18 timeouts.client_header: expected a number of seconds, got \"30s\""),
        ("timeouts:\n  client_header: \"30\"", "2:18 timeouts.client_header: expected a number of seconds, got the quoted string \"30\""),
        ("timeouts:\n  client_header: .inf", "2:18 timeouts.client_header: expected a number of seconds, got \".inf\""),
        ("timeouts:\n  client_header: .nan", "2:18 timeouts.client_header: expected a number of seconds, got \".nan\""),
        ("timeouts:\n  client_header: 1e999", "2:18 timeouts.client_header: expected a number of seconds, got \"1e999\""),
        ("timeouts:\n  client_header: 1:30", "2:18 timeouts.client_header: expected a number of seconds, got \"1:30\""),
        ("timeouts:\n  client_header: 0x10", "2:18 timeouts.client_header: expected a number of seconds, got \"0x10\""),
        ("timeouts:\n  client_header: [1]", "2:18 timeouts.client_header: expected a number of seconds, got a list"),
        ("timeouts:\n  client_header: {a: 1}", "2:18 timeouts.client_header: expected a number of seconds, got a mapping"),
        ("timeouts:\n  client_header:", "2:17 timeouts.client_header: expected a number of seconds, got nothing"),
        ("timeouts:\n  client_header: ~", "2:18 timeouts.client_header: expected a number of seconds, got ~"),
        ("timeouts:\n  client_header: null", "2:18 timeouts.client_header: expected a number of seconds, got null"),
        ("pool:\n  idle_timeout: x", "2:17 pool.idle_timeout: expected a number of seconds, got \"x\""),
        ("dns:\n  cache_ttl: x", "2:14 dns.cache_ttl: expected a number of seconds, got \"x\""),
        ("max_connections: \"10\"", "1:18 max_connections: expected a whole number, got the quoted string \"10\""),
        ("max_connections: 1.5", "1:18 max_connections: expected a whole number, got \"1.5\""),
        ("max_connections: 1e3", "1:18 max_connections: expected a whole number, got \"1e3\""),
        ("max_connections: 0x10", "1:18 max_connections: expected a whole number, got \"0x10\""),
        ("max_connections: 1_000", "1:18 max_connections: expected a whole number, got \"1_000\""),
        ("max_connections: +", "1:18 max_connections: expected a whole number, got \"+\""),
        ("max_connections: 99999999999999999999", "1:18 max_connections: 99999999999999999999 is too large; must be at least 1"),
        ("event_loops: many", "1:14 event_loops: expected a whole number, got \"many\""),
        ("limits:\n  max_request_line_bytes: 8k", "2:27 limits.max_request_line_bytes: expected a whole number, got \"8k\""),
        ("limits:\n  max_header_bytes: true", "2:21 limits.max_header_bytes: expected a whole number, got \"true\""),
        ("limits:\n  max_header_count: []", "2:21 limits.max_header_count: expected a whole number, got a list"),
        ("limits:\n  max_request_body_bytes: 1.0", "2:27 limits.max_request_body_bytes: expected a whole number, got \"1.0\""),
        ("pool:\n  max_idle_per_origin: eight", "2:24 pool.max_idle_per_origin: expected a whole number, got \"eight\""),
        ("log:\n  queue_limit: lots", "2:16 log.queue_limit: expected a whole number, got \"lots\""),
        ("headers:\n  via: yes", "2:8 headers.via: expected true or false, got \"yes\""),
        ("headers:\n  via: on", "2:8 headers.via: expected true or false, got \"on\""),
        ("headers:\n  via: 1", "2:8 headers.via: expected true or false, got \"1\""),
        ("headers:\n  via: \"true\"", "2:8 headers.via: expected true or false, got the quoted string \"true\""),
        ("headers:\n  via:", "2:7 headers.via: expected true or false, got nothing"),
        ("log:\n  verbose: tru", "2:12 log.verbose: expected true or false, got \"tru\""),
        ("log:\n  reveal_secrets: no", "2:19 log.reveal_secrets: expected true or false, got \"no\""),
        ("log:\n  include_headers: [true]", "2:20 log.include_headers: expected true or false, got a list"),
        ("log:\n  path: [a]", "2:9 log.path: expected a file path or \"-\" (stdout), got a list"),
        ("log:\n  path:", "2:8 log.path: expected a file path or \"-\" (stdout), got nothing"),
        ("state_dir: {a: 1}", "1:12 state_dir: expected a folder path, got a mapping"),
        ("state_dir: ~", "1:12 state_dir: expected a folder path, got ~ (null in YAML; write \"~\" in quotes for the home folder)"),
        ("listen: 127.0.0.1:8080", "1:9 listen: expected a list of \"host:port\" strings or {address, mode} mappings, got \"127.0.0.1:8080\""),
        ("listen: {a: 1}", "1:9 listen: expected a list of \"host:port\" strings or {address, mode} mappings, got a mapping"),
        ("listen:", "1:8 listen: expected a list of \"host:port\" strings or {address, mode} mappings, got nothing"),
        ("listen: [[a]]", "1:10 listen[0]: expected a \"host:port\" string, got a list (write IPv6 addresses in quotes: \"[::1]:8080\")"),
        ("listen: [~]", "1:10 listen[0]: expected a \"host:port\" string, got ~"),
        ("connect:\n  allowed_ports: 443", "2:18 connect.allowed_ports: expected a list of port numbers, got \"443\""),
        ("connect:\n  allowed_ports: [https]", "2:19 connect.allowed_ports[0]: expected a port number, got \"https\""),
        ("connect:\n  allowed_ports:\n    - 443\n    - \"8443\"", "4:7 connect.allowed_ports[1]: expected a port number, got the quoted string \"8443\""),
        ("limits: 5", "1:9 limits: expected a mapping, got \"5\""),
        ("timeouts: [1, 2]", "1:11 timeouts: expected a mapping, got a list"),
        ("connect: yes", "1:10 connect: expected a mapping, got \"yes\""),
        ("pool: \"\"", "1:7 pool: expected a mapping, got the quoted string \"\""),
        ("dns: 0", "1:6 dns: expected a mapping, got \"0\""),
        ("headers: true", "1:10 headers: expected a mapping, got \"true\""),
        ("log: stdout", "1:6 log: expected a mapping, got \"stdout\""),
    ])
    func typeErrors(yaml: String, expected: String) {
        #expect(error(yaml) == expected)
    }

    @Test("long values are shortened in messages")
    func longValues() {
        let long = String(repeating: "a", count: 60)
        #expect(error("max_connections: \(long)")
            == "1:18 max_connections: expected a whole number, got \"\(String(repeating: "a", count: 40))…\"")
    }

    @Test("the top level must be a mapping", arguments: [
        ("- a\n- b\n", "1:1 : expected a mapping of settings at the top level, got a list"),
        ("hello\n", "1:1 : expected a mapping of settings at the top level, got \"hello\""),
        ("# comment\n\n  42\n", "3:3 : expected a mapping of settings at the top level, got \"42\""),
        ("'quoted'\n", "1:1 : expected a mapping of settings at the top level, got the quoted string \"quoted\""),
    ])
    func topLevelMustBeAMapping(yaml: String, expected: String) {
        #expect(error(yaml) == expected)
    }
}

@Suite("Range errors")
struct RangeErrorTests {
    @Test("values out of range", arguments: [
        ("event_loops: 257", "1:14 event_loops: must be between 0 and 256 (0 = one per core)"),
        ("event_loops: -1", "1:14 event_loops: must be between 0 and 256 (0 = one per core)"),
        ("event_loop_spin_us: 1001", "1:21 event_loop_spin_us: must be between 0 and 1000 microseconds (0 = never spin)"),
        ("event_loop_spin_us: -5", "1:21 event_loop_spin_us: must be between 0 and 1000 microseconds (0 = never spin)"),
        ("event_loop_spin_us: 5us", "1:21 event_loop_spin_us: expected a whole number, got \"5us\""),
        ("max_connections: 0", "1:18 max_connections: must be at least 1"),
        ("max_connections: -5", "1:18 max_connections: must be at least 1"),
        ("limits:\n  max_request_line_bytes: 0", "2:27 limits.max_request_line_bytes: must be at least 1"),
        ("limits:\n  max_header_bytes: 0", "2:21 limits.max_header_bytes: must be at least 1"),
        ("limits:\n  max_header_count: 0", "2:21 limits.max_header_count: must be at least 1"),
        ("limits:\n  max_request_body_bytes: -1", "2:27 limits.max_request_body_bytes: must not be negative (0 = unlimited)"),
        ("timeouts:\n  client_header: 0", "2:18 timeouts.client_header: must be greater than 0"),
        ("timeouts:\n  client_idle: 0.0", "2:16 timeouts.client_idle: must be greater than 0"),
        ("timeouts:\n  upstream_connect: -1", "2:21 timeouts.upstream_connect: must be greater than 0"),
        ("timeouts:\n  upstream_first_byte: -0.5", "2:24 timeouts.upstream_first_byte: must be greater than 0"),
        ("timeouts:\n  upstream_idle: 31536001", "2:18 timeouts.upstream_idle: must be at most 31536000 (one year)"),
        ("timeouts:\n  shutdown_grace: 1e300", "2:19 timeouts.shutdown_grace: must be at most 31536000 (one year)"),
        ("pool:\n  max_idle_per_origin: -1", "2:24 pool.max_idle_per_origin: must not be negative (0 = keep no idle connections)"),
        ("pool:\n  idle_timeout: 0", "2:17 pool.idle_timeout: must be greater than 0"),
        ("dns:\n  cache_ttl: -1", "2:14 dns.cache_ttl: must not be negative (0 = disabled)"),
        ("log:\n  queue_limit: 0", "2:16 log.queue_limit: must be at least 1"),
        ("log:\n  path: \"\"", "2:9 log.path: must not be empty; expected a file path or \"-\" (stdout)"),
        ("log:\n  path: ''", "2:9 log.path: must not be empty; expected a file path or \"-\" (stdout)"),
        ("state_dir: \"\"", "1:12 state_dir: must not be empty; expected a folder path"),
        ("state_dir: ~bob/lookout", "1:12 state_dir: only \"~\" and \"~/...\" are expanded; write \"~bob/lookout\" as a full path"),
        ("connect:\n  allowed_ports: [0]", "2:19 connect.allowed_ports[0]: port must be between 1 and 65535"),
        ("connect:\n  allowed_ports: [443, 65536]", "2:24 connect.allowed_ports[1]: port must be between 1 and 65535"),
        ("connect:\n  allowed_ports: [-443]", "2:19 connect.allowed_ports[0]: port must be between 1 and 65535"),
        ("connect:\n  allowed_ports: [443, 80, 443]", "2:28 connect.allowed_ports[2]: port 443 is listed twice (first on line 2)"),
        ("listen: []", "1:9 listen: expected a list of \"host:port\" strings or {address, mode} mappings with at least one address"),
        ("listen: [\"127.0.0.1:8080\", \"localhost:8080\"]", "1:28 listen[1]: 127.0.0.1:8080 is listed twice (first on line 1)"),
    ])
    func outOfRange(yaml: String, expected: String) {
        #expect(error(yaml) == expected)
    }

    @Test("bad listen addresses, each at its own line")
    func badListenAddresses() {
        let yaml = """
            listen:
              - "127.0.0.1:8080"
              - "example.com:80"
              - "[::1]:70000"
              - "::1:8080"
              - "127.0.0.1"
              - 127.0.0.1:http
              - ":8080"
              - "[::1]"
              - "[::1"
              - "[127.0.0.1]:80"
              - "[::1]8080"
              - "127.0.0.1:"
              - "256.1.1.1:80"
              - "127.0.0.1:1234567"
            """
        #expect(errors(yaml) == [
            "3:5 listen[1]: host \"example.com\" must be an IPv4 or IPv6 address or \"localhost\"",
            "4:5 listen[2]: port 70000 is out of range (0...65535; 0 = the kernel picks)",
            "5:5 listen[3]: IPv6 addresses must be in brackets with the port after them, e.g. \"[::1]:8080\"; got \"::1:8080\"",
            "6:5 listen[4]: missing port in \"127.0.0.1\"; expected \"host:port\"",
            "7:5 listen[5]: port \"http\" is not a number",
            "8:5 listen[6]: missing host in \":8080\"; expected \"host:port\"",
            "9:5 listen[7]: missing port in \"[::1]\"; expected \"[address]:port\"",
            "10:5 listen[8]: missing \"]\" after the IPv6 address in \"[::1\"",
            "11:5 listen[9]: \"127.0.0.1\" is not an IPv6 address",
            "12:5 listen[10]: expected \":port\" after \"]\" in \"[::1]8080\"",
            "13:5 listen[11]: missing port in \"127.0.0.1:\"",
            "14:5 listen[12]: host \"256.1.1.1\" must be an IPv4 or IPv6 address or \"localhost\"",
            "15:5 listen[13]: port \"1234567\" is not a number",
        ])
    }
}

@Suite("Duplicate keys")
struct DuplicateKeyTests {
    @Test("a duplicate key is reported at its second occurrence")
    func secondOccurrence() {
        let yaml = """
            timeouts:
              client_header: 5
              client_idle: 6
              client_header: 7
            """
        #expect(error(yaml) == "4:3 timeouts.client_header: duplicate key 'client_header' (first set on line 2)")
    }

    @Test("duplicates at several levels, a third occurrence, and other errors are all reported")
    func manyDuplicates() {
        let yaml = """
            log:
              verbose: true
              verbose: false
              verbose: maybe
            headers:
              via: nope
            log:
              queue_limit: 0
            event_loops: 1
            event_loops: 2
            max_connections: 0
            """
        #expect(errors(yaml) == [
            "3:3 log.verbose: duplicate key 'verbose' (first set on line 2)",
            "4:3 log.verbose: duplicate key 'verbose' (first set on line 2)",
            "6:8 headers.via: expected true or false, got \"nope\"",
            "7:1 log: duplicate key 'log' (first set on line 1)",
            "10:1 event_loops: duplicate key 'event_loops' (first set on line 9)",
            "11:18 max_connections: must be at least 1",
        ])
    }

    @Test("quoted and plain spellings of a key are the same key")
    func quotedDuplicate() {
        #expect(error("headers:\n  \"via\": true\n  via: false\n")
            == "3:3 headers.via: duplicate key 'via' (first set on line 2)")
        #expect(error("headers:\n  via: true\n  'via': false\n")
            == "3:3 headers.via: duplicate key 'via' (first set on line 2)")
    }

    @Test("duplicate keys in flow mappings, and an unknown key repeated")
    func flowDuplicates() {
        #expect(errors("timeouts: {client_header: 1, client_header: 2}\nbogus: 1\nbogus: 2\n") == [
            "1:30 timeouts.client_header: duplicate key 'client_header' (first set on line 1)",
            "2:1 bogus: unknown key",
            "3:1 bogus: duplicate key 'bogus' (first set on line 2)",
        ])
    }

    @Test("lines and columns stay right after a duplicate on a CRLF file with a BOM and non-ASCII text")
    func positionsSurviveRenaming() {
        let yaml = "\u{FEFF}# café ☕️\r\nlog: {path: \"é☕️\", path: x}\r\ntimeouts:\r\n  client_header: 1\r\n  client_header: 2\r\n  client_idle: soon\r\n"
        #expect(errors(yaml) == [
            "2:20 log.path: duplicate key 'path' (first set on line 2)",
            "5:3 timeouts.client_header: duplicate key 'client_header' (first set on line 4)",
            "6:16 timeouts.client_idle: expected a number of seconds, got \"soon\"",
        ])
    }

    @Test("duplicate keys are detected even when YAML resolves them to different types")
    func differentTags() {
        #expect(errors("1: a\n\"1\": b\n") == [
            "1:1 1: unknown key",
            "2:1 1: duplicate key '1' (first set on line 1)",
        ])
    }

    @Test("a duplicate key written with an anchor, a tag or as an explicit key is still found")
    func propertiesBeforeTheKey() {
        #expect(errors("headers:\n  &k via: true\n  via: false\nlog: {verbose: 1}\n") == [
            "3:3 headers.via: duplicate key 'via' (first set on line 2)",
            "4:16 log.verbose: expected true or false, got \"1\"",
        ])
        #expect(errors("headers:\n  !!str via: true\n  via: false\nlog: {verbose: 1}\n") == [
            "3:3 headers.via: duplicate key 'via' (first set on line 2)",
            "4:16 log.verbose: expected true or false, got \"1\"",
        ])
        #expect(errors("headers:\n  via: true\n  ? via\n  : false\n") == [
            "3:5 headers.via: duplicate key 'via' (first set on line 2)",
        ])
    }

    @Test("a duplicate whose first spelling can't be renamed stops the reading there, and says so")
    func unrenameableDuplicate() {
        #expect(errors("headers:\n  \"\\x76ia\": true\n  via: false\nlog: {verbose: 1}\n") == [
            "2:3 : duplicate key 'via' (fix it to see any other errors)",
        ])
        #expect(errors("\"\": 1\n'': 2\n") == ["1:1 : duplicate key '' (fix it to see any other errors)"])
    }

    @Test("a duplicated key inside a list is still found")
    func duplicateInsideList() {
        #expect(errors("listen:\n  - {a: 1, a: 2}\n") == [
            "2:5 listen[0].address: a listen mapping needs address (\"host:port\")",
            "2:6 listen[0].a: unknown key",
            "2:12 listen[0].a: duplicate key 'a' (first set on line 2)",
        ])
    }
}

@Suite("Several errors in one file")
struct SeveralErrorsTests {
    @Test("every error in a file is reported, in file order")
    func allReported() {
        let yaml = """
            # a file with many mistakes
            listen:
              - "127.0.0.1:8080"
              - "example.com:80"
            event_loops: 1000
            max_connections: lots
            timeout: 3
            limits:
              max_header_count: 0
              max_headers: 10
            timeouts:
              client_header: 0
              upstream_connect: 2s
              upstream_idle: 5
            connect:
              allowed_ports: [443, 0]
            pool: 3
            dns:
              cache_ttl: -5
            headers:
              via: yes
            log:
              path: ""
              verbose: false
              queue_limit: 0
              color: true
            """
        #expect(errors(yaml) == [
            "4:5 listen[1]: host \"example.com\" must be an IPv4 or IPv6 address or \"localhost\"",
            "5:14 event_loops: must be between 0 and 256 (0 = one per core)",
            "6:18 max_connections: expected a whole number, got \"lots\"",
            "7:1 timeout: unknown key 'timeout'; did you mean 'timeouts'?",
            "9:21 limits.max_header_count: must be at least 1",
            "10:3 limits.max_headers: unknown key",
            "12:18 timeouts.client_header: must be greater than 0",
            "13:21 timeouts.upstream_connect: expected a number of seconds, got \"2s\"",
            "16:24 connect.allowed_ports[1]: port must be between 1 and 65535",
            "17:7 pool: expected a mapping, got \"3\"",
            "19:14 dns.cache_ttl: must not be negative (0 = disabled)",
            "21:8 headers.via: expected true or false, got \"yes\"",
            "23:9 log.path: must not be empty; expected a file path or \"-\" (stdout)",
            "25:16 log.queue_limit: must be at least 1",
            "26:3 log.color: unknown key",
        ])
    }

    @Test("ConfigurationErrors.description is one error per line, each FILE:LINE:COL: KEYPATH: message")
    func descriptions() {
        do {
            _ = try ConfigurationLoader.load(yaml: "event_loops: 999\nbogus: 1\n", file: "conf/x.yaml")
            Issue.record("loaded")
        } catch {
            #expect(error.description == """
                conf/x.yaml:1:14: event_loops: must be between 0 and 256 (0 = one per core)
                conf/x.yaml:2:1: bogus: unknown key
                """)
            #expect(error.errors.allSatisfy { $0.file == "conf/x.yaml" })
            #expect("\(error.errors[1])" == "conf/x.yaml:2:1: bogus: unknown key")
        }
    }

    @Test("ConfigurationError.description without a place or a key path")
    func descriptionForms() {
        let withPlace = ConfigurationError(file: "a.yaml", line: 3, column: 7, keyPath: "log.path", message: "m")
        #expect(withPlace.description == "a.yaml:3:7: log.path: m")
        let noKeyPath = ConfigurationError(file: "a.yaml", line: 2, column: 1, keyPath: "", message: "invalid YAML: x")
        #expect(noKeyPath.description == "a.yaml:2:1: invalid YAML: x")
        let noPlace = ConfigurationError(file: "a.yaml", line: 0, column: 0, keyPath: "", message: "cannot read")
        #expect(noPlace.description == "a.yaml: cannot read")
        #expect(ConfigurationErrors(errors: [withPlace, noPlace]).description == "a.yaml:3:7: log.path: m\na.yaml: cannot read")
    }
}

@Suite("Byte-order mark")
struct ByteOrderMarkTests {
    @Test("a leading byte-order mark is not counted as a column")
    func bomColumns() {
        #expect(errors("\u{FEFF}a: 1\nb: 2\ntimeouts: {client_idle: x}\n") == [
            "1:1 a: unknown key",
            "2:1 b: unknown key",
            "3:25 timeouts.client_idle: expected a number of seconds, got \"x\"",
        ])
    }
}

@Suite("YAML syntax errors")
struct SyntaxErrorTests {
    @Test("syntax errors carry the place libyaml found them", arguments: [
        ("timeouts:\n  client_header: 5\n bad: [\n",
         "3:2 : invalid YAML: did not find expected key (while parsing a block mapping at line 1, column 1)"),
        ("timeouts:\n\tclient_header: 5\n",
         "2:1 : invalid YAML: found character that cannot start any token (while scanning for the next token at line 2, column 1)"),
        ("a: 1\n---\nb: 2\n",
         "2:1 : invalid YAML: but found another document (expected a single document in the stream at line 1, column 1)"),
        ("listen: [\"127.0.0.1:8080\"\n",
         "2:1 : invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 1, column 9)"),
        ("log:\n  path: \"unterminated\n",
         "3:1 : invalid YAML: found unexpected end of stream (while scanning a quoted scalar at line 2, column 9)"),
        ("a: &x 1\nb: *y\n", "2:4 : invalid YAML: found undefined alias"),
        ("log: \u{1}\n", "1:6 : invalid YAML: control characters are not allowed"),
        ("listen:\n  - [::1]:8080\n",
         "2:6 : invalid YAML: did not find expected node content (while parsing a flow node at line 2, column 6)"),
    ])
    func syntaxErrors(yaml: String, expected: String) {
        #expect(error(yaml) == expected)
    }
}
