import Foundation
import Testing
@testable import LookoutConfig

@Suite struct ShapingConfigTests {
    @Test func readsTheIssueShape() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-shaping-\(getpid())")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("fixtures"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("{}".utf8).write(to: folder.appendingPathComponent("fixtures/config.json"))
        let file = folder.appendingPathComponent("lookout.yaml").path
        try Data("""
        map:
          remote:
            - from: "https://api.example.com/v2/"
              to: "http://127.0.0.1:3000/"
              preserve_host: false
          local:
            - from: "https://api.example.com/config.json"
              file: "fixtures/config.json"
              status: 200
              content_type: ""
        shaping:
          rules:
            - hosts: ["api.example.com"]
              profile: ""
              latency_ms: 300
              jitter_ms: 50
              download_kbps: 1600
              upload_kbps: 750
              faults:
                status: {code: 503, rate: 0.1}
                reset_after_bytes: 0
                stall_ms: 0
        """.utf8).write(to: URL(fileURLWithPath: file))
        let config = try ConfigurationLoader.load(contentsOf: file)
        let remote = try #require(config.map.remote.first)
        #expect(remote.from.scheme == "https" && remote.from.host == "api.example.com" && remote.from.port == 443)
        #expect(remote.from.path == "/v2/" && remote.to.port == 3000 && remote.to.path == "/" && !remote.preserveHost)
        #expect(!remote.allowDowngrade)
        let local = try #require(config.map.local.first)
        #expect(local.contentType == nil)
        #expect(local.file == folder.appendingPathComponent("fixtures/config.json").standardized.path && local.status == 200)
        let rule = try #require(config.shaping.rules.first)
        #expect(rule.hosts.map(\.text) == ["api.example.com"] && rule.profile.isEmpty)
        #expect(rule.latencyMilliseconds == 300 && rule.jitterMilliseconds == 50)
        #expect(rule.downloadKbps == 1600 && rule.uploadKbps == 750)
        #expect(rule.faultStatus == 503 && rule.faultStatusRate == 0.1 && rule.resetAfterBytes == 0 && rule.stallMilliseconds == 0)
    }

    @Test func aProfileFillsWhatTheRuleLeavesOut() throws {
        let config = try load("""
        shaping:
          rules:
            - hosts: ["a.test"]
              profile: "Slow-4G"
              upload_kbps: 100
        """)
        let rule = try #require(config.shaping.rules.first)
        #expect(rule.profile == "fast-3g" && rule.latencyMilliseconds == 562.5 && rule.downloadKbps == 1440 && rule.uploadKbps == 100)
        #expect(ShapingProfile.named("slow-3g")?.downloadKbps == 400 && ShapingProfile.named("dsl")?.latencyMilliseconds == 5)
    }

    @Test func urlPrefixes() {
        guard case .success(let prefix) = MapURLPrefix.parse("http://[::1]:8080", allowPattern: false) else {
            Issue.record("an IPv6 target parses")
            return
        }
        #expect(prefix.host == "::1" && prefix.port == 8080 && prefix.path == "/")
        guard case .success(let pattern) = MapURLPrefix.parse("https://*.Example.com/api", allowPattern: true) else {
            Issue.record("a pattern parses on the from side")
            return
        }
        #expect(pattern.hostPattern.matches("a.example.com") && pattern.port == 443 && pattern.path == "/api")
        if case .success = MapURLPrefix.parse("https://*.example.com/", allowPattern: false) { Issue.record("a target names one host") }
        if case .success = MapURLPrefix.parse("http://u:p@a.test/", allowPattern: true) { Issue.record("no credentials") }
        if case .success = MapURLPrefix.parse("http://a.test:0/", allowPattern: true) { Issue.record("port 0") }
        if case .success = MapURLPrefix.parse("a.test/", allowPattern: true) { Issue.record("a scheme is needed") }
    }

    @Test func errorsNameTheKey() {
        #expect(error("shaping:\n  rules:\n    - hosts: [\"a.test\"]\n      latency_ms: fast")?
            .contains("shaping.rules[0].latency_ms: expected a number") == true)
        #expect(error("shaping:\n  rules:\n    - hosts: [\"a.test\"]\n      faults:\n        stall: 5")?
            .contains("shaping.rules[0].faults.stall: unknown key") == true)
        #expect(error("shaping:\n  rules:\n    - latency_ms: 5")?.contains("shaping.rules[0].hosts: a rule needs hosts") == true)
        #expect(error("map:\n  local:\n    - from: \"http://a.test/x\"\n      file: \"/nonexistent/x.json\"")?
            .contains("map.local[0].file: /nonexistent/x.json: no such file") == true)
        #expect(error("map:\n  remote:\n    - {from: \"http://a.test/\", to: \"http://b.test/\"}\n    - {from: \"http://A.test\", to: \"http://c.test/\"}")?
            .contains("map.remote[1].from: http://A.test is already mapped") == true)
        #expect(error("map:\n  local:\n    - {from: \"http://a.test/x\", file: \"/dev/null\", content_type: \"json\"}")?
            .contains("map.local[0].content_type: expected a media type") == true)
        #expect(error("map:\n  locals: []")?.contains("map.locals: unknown key") == true)
    }
}
