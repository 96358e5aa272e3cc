import Foundation
import LookoutTLS
import Testing
@testable import LookoutConfig

/// `tls`, `interception` and `trust`: what loads, what each mistake says and where.
@Suite("TLS, interception and trust keys") struct TrustConfigTests {
    /// A folder holding `root.pem` (a CA certificate) and the config file's name inside it.
    struct Folder {
        let url: URL
        let rootPEM: String
        let pin: String
        var configPath: String { url.appendingPathComponent("lookout.yaml").path }

        init() throws {
            url = try makeTemporaryDirectory()
            let authority = try CertificateAuthority.create()
            rootPEM = authority.exportPEM()
            pin = authority.certificate.spkiSHA256Pin
            try rootPEM.write(to: url.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
        }

        func load(_ yaml: String) throws(ConfigurationErrors) -> LookoutConfiguration {
            try ConfigurationLoader.load(yaml: yaml, file: configPath, environment: testEnvironment)
        }

        func errors(_ yaml: String) -> [String] {
            do {
                _ = try load(yaml)
                return []
            } catch {
                return error.errors.map(render)
            }
        }

        func remove() { try? FileManager.default.removeItem(at: url) }
    }

    @Test func defaultsInterceptNothingAndTrustTheSystemRoots() {
        #expect(defaults.interception.hosts.isEmpty)
        #expect(!defaults.interception.isEnabled)
        #expect(defaults.interception.leafCacheSize == 1024)
        #expect(defaults.trust.systemRoots)
        #expect(defaults.trust.caFiles.isEmpty)
        #expect(defaults.trust.pinningWithoutInterception == .refuse)
        #expect(defaults.trust.defaultRule.evaluators == [.default])
        #expect(defaults.trust.rules.isEmpty)
        #expect(defaults.tls.minimumVersion == .tls12)
        #expect(defaults.timeouts.tlsHandshake == 10)
    }

    @Test func readsAFullRuleWithPathsFromTheConfigFolder() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let config = try folder.load("""
            tls:
              minimum_version: "1.3"
            timeouts:
              tls_handshake: 2.5
            interception:
              hosts: ["**.example.com", "api.example.org"]
              leaf_cache_size: 16
            trust:
              system_roots: false
              ca_files: [root.pem]
              pinning_without_interception: allow
              rules:
                - name: api
                  hosts: ["api.example.com", "*.example.org"]
                  evaluators: [default, public-keys, pinned-certificates]
                  pins: ["\(folder.pin)", "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]
                  certificates: ["./root.pem"]
                  ca_files: ["\(folder.url.path)/root.pem"]
                  expires: 2027-06-30
                  mode: report-only
            """)
        #expect(config.tls.minimumVersion == .tls13)
        #expect(config.timeouts.tlsHandshake == 2.5)
        #expect(config.interception.hosts.map(\.text) == ["**.example.com", "api.example.org"])
        #expect(config.interception.leafCacheSize == 16)
        #expect(config.trust.systemRoots == false)
        let root = folder.url.appendingPathComponent("root.pem").standardized.path
        #expect(config.trust.caFiles == [root])
        #expect(config.trust.pinningWithoutInterception == .allow)
        let rule = try #require(config.trust.rules.first)
        #expect(rule.name == "api")
        #expect(rule.hosts.map(\.text) == ["api.example.com", "*.example.org"])
        #expect(rule.evaluators == [.default, .publicKeys, .pinnedCertificates])
        #expect(rule.pins.map(\.description) == [folder.pin, "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="])
        #expect(rule.certificates == [root])
        #expect(rule.caFiles == [root])
        // The whole of 30 June 2027 UTC is inside the pin set's life; 1 July 00:00 is not.
        #expect(rule.pinsExpire == 1_814_400_000)
        #expect(rule.mode == .reportOnly)
    }

    @Test func evaluatorsFollowFromWhatTheRuleGivesWhenUnsaid() throws {
        let folder = try Folder()
        defer { folder.remove() }
        let config = try folder.load("""
            trust:
              rules:
                - hosts: ["a.example"]
                  pins: ["\(folder.pin)"]
                - hosts: ["b.example"]
                  certificates: [root.pem]
                - hosts: ["c.example"]
            """)
        #expect(config.trust.rules.map(\.evaluators) == [[.default, .publicKeys], [.default, .pinnedCertificates], [.default]])
    }

    @Test func aSingleEvaluatorNameNeedNotBeAList() throws {
        let config = try load("trust:\n  default:\n    evaluators: disabled\n")
        #expect(config.trust.defaultRule.evaluators == [.disabled])
    }

    @Test(arguments: [
        ("tls:\n  minimum_version: \"1.1\"", "2:20 tls.minimum_version: expected \"1.2\" or \"1.3\""),
        ("timeouts:\n  tls_handshake: 0", "2:18 timeouts.tls_handshake: must be greater than 0"),
        ("interception:\n  hosts: \"**\"", "2:10 interception.hosts: expected a list of host patterns"),
        ("interception:\n  hosts: [\"a.*.com\"]", "2:11 interception.hosts[0]: host pattern \"a.*.com\""),
        ("interception:\n  hosts: [\"a.com\", \"A.com\"]", "2:20 interception.hosts[1]: \"A.com\" is listed twice"),
        ("interception:\n  leaf_cache_size: 0", "2:20 interception.leaf_cache_size: must be at least 1"),
        ("trust:\n  pinning_without_interception: maybe", "2:33 trust.pinning_without_interception: expected refuse or allow"),
        ("trust:\n  default:\n    hosts: [\"a\"]", "3:5 trust.default.hosts: unknown key 'hosts'"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      evaluators: [defualt]",
         "4:20 trust.rules[0].evaluators[0]: expected one of default, revocation, public-keys, pinned-certificates, disabled, got \"defualt\"; did you mean 'default'?"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      evaluators: [default, composite]",
         "4:29 trust.rules[0].evaluators[1]: list the evaluators to combine instead of composite"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      evaluators: [disabled, default]",
         "4:19 trust.rules[0].evaluators: disabled turns evaluation off; it cannot be combined"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      evaluators: [default, public-keys]",
         "4:19 trust.rules[0].evaluators: public-keys needs pins in the same rule"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      evaluators: [default]\n      pins: [\"sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"]",
         "5:13 trust.rules[0].pins: pins are only checked by the public-keys evaluator; add it to evaluators"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      pins: [\"sha256/notbase64!\"]",
         "4:14 trust.rules[0].pins[0]: pin \"sha256/notbase64!\" is not valid base64"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      pins: [\"sha1/AAAA\"]",
         "4:14 trust.rules[0].pins[0]: pin \"sha1/AAAA\" uses \"sha1\"; only sha256 pins are supported"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      pins: [\"sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"]\n      expires: 2027-02-30",
         "5:16 trust.rules[0].expires: expected a date YYYY-MM-DD, got \"2027-02-30\""),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      expires: 2027-01-30",
         "4:16 trust.rules[0].expires: expires applies to pins"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      mode: strict", "4:13 trust.rules[0].mode: expected enforce or report-only"),
        ("trust:\n  rules:\n    - evaluators: [default]", "3:7 trust.rules[0].hosts: a rule needs hosts"),
        ("trust:\n  rules:\n    - hosts: [\"**.a.example\"]\n    - hosts: [\"**.A.example\"]",
         "4:7 trust.rules[1].hosts: \"**.A.example\" is already covered by trust.rules[0] (line 3)"),
        ("trust:\n  rules:\n    - name: x\n      hosts: [a]\n    - name: x\n      hosts: [b]",
         "5:7 trust.rules[1].name: rule name 'x' is used twice (first on line 3)"),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      certificates: [/nonexistent/pinned.pem]",
         "4:22 trust.rules[0].certificates[0]: "),
        ("trust:\n  rules:\n    - hosts: [a.example]\n      pin: []", "4:7 trust.rules[0].pin: unknown key 'pin'; did you mean 'pins'?"),
        ("trust:\n  rules: {hosts: [a]}", "2:10 trust.rules: expected a list of rules"),
        ("trust:\n  system_roots: false", "2:17 trust.system_roots: with system_roots false and no trust.ca_files, trust.default has no root to trust"),
    ])
    func rejects(yaml: String, expected: String) {
        let all = errors(yaml)
        #expect(all.contains { $0.hasPrefix(expected) }, "\(all)")
    }

    @Test func aFileThatIsNotACertificateIsNamedWithItsLine() throws {
        let folder = try Folder()
        defer { folder.remove() }
        try "not a certificate\n".write(to: folder.url.appendingPathComponent("junk.pem"), atomically: true, encoding: .utf8)
        let all = folder.errors("trust:\n  ca_files: [root.pem, junk.pem]\n")
        #expect(all.count == 1)
        #expect(all.first?.hasPrefix("2:24 trust.ca_files[1]: ") == true, "\(all)")
        #expect(all.first?.contains("junk.pem") == true, "\(all)")
    }

    @Test func everyMistakeInOneFileIsReported() {
        let all = errors("""
            tls:
              minimum_version: 1.0
            interception:
              hosts: ["*"]
            trust:
              rules:
                - hosts: [a.example]
                  mode: strict
            """)
        #expect(all.count == 3, "\(all)")
    }
}
