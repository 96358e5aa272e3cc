import Testing
import LookoutTLS

/// An evaluator that records nothing and fails with a fixed reason, or passes.
struct FixedEvaluator: ServerTrustEvaluator {
    let name: String
    let failure: TrustEvaluationError.Reason?
    init(_ name: String, failing failure: TrustEvaluationError.Reason? = nil) {
        self.name = name
        self.failure = failure
    }
    func evaluate(_ chain: [Certificate], host: String, now: Int64) throws(TrustEvaluationError) {
        if let failure { throw TrustEvaluationError(reason: failure, message: "fixed", evaluator: name) }
    }
}

@Suite struct ServerTrustManagerTests {
    let pki = TestPKI.shared

    func manager() throws -> ServerTrustManager {
        try ServerTrustManager(rules: [
            TrustRule(name: "deep", hosts: ["**.example.com"], evaluator: FixedEvaluator("deep")),
            TrustRule(name: "one", hosts: ["*.example.com"], evaluator: FixedEvaluator("one")),
            TrustRule(name: "exact", hosts: ["api.example.com", "192.0.2.1", "[2001:db8::1]"], evaluator: FixedEvaluator("exact")),
            TrustRule(name: "deeper", hosts: ["**.eu.example.com"], evaluator: FixedEvaluator("deeper")),
            TrustRule(hosts: ["*.eu.example.com"], evaluator: FixedEvaluator("unnamed")),
            TrustRule(name: "everything-org", hosts: ["**.org"], evaluator: FixedEvaluator("org")),
        ], defaultRule: TrustRule(hosts: [], evaluator: FixedEvaluator("fallback")))
    }

    @Test func mostSpecificRuleWins() throws {
        let manager = try manager()
        #expect(manager.rule(for: "api.example.com").ruleName == "exact")
        #expect(manager.rule(for: "API.Example.COM.").ruleName == "exact")
        #expect(manager.rule(for: "www.example.com").ruleName == "one")
        #expect(manager.rule(for: "a.b.example.com").ruleName == "deep")
        #expect(manager.rule(for: "x.eu.example.com").ruleName == "rules[4]")
        #expect(manager.rule(for: "x.y.eu.example.com").ruleName == "deeper")
        #expect(manager.rule(for: "eu.example.com").ruleName == "one")
        #expect(manager.rule(for: "example.com").ruleName == "default")
        #expect(manager.rule(for: "example.com").index == nil)
        #expect(manager.rule(for: "badexample.com").ruleName == "default")
        #expect(manager.rule(for: "192.0.2.1").ruleName == "exact")
        #expect(manager.rule(for: "2001:db8:0::1").ruleName == "exact")
        #expect(manager.rule(for: "[2001:db8::1]").ruleName == "exact")
        #expect(manager.rule(for: "192.0.2.2").ruleName == "default")
        #expect(manager.rule(for: "a.b.c.org").ruleName == "everything-org")
        let match = manager.rule(for: "www.example.com")
        #expect(match.index == 1)
        #expect(match.pattern?.text == "*.example.com")
    }

    @Test func tiesGoToTheEarlierRule() throws {
        let manager = try ServerTrustManager(rules: [
            TrustRule(name: "first", hosts: ["*.example.com"], evaluator: FixedEvaluator("a")),
            TrustRule(name: "second", hosts: ["*.example.com", "**"], evaluator: FixedEvaluator("b")),
        ], defaultRule: TrustRule(hosts: [], evaluator: FixedEvaluator("fallback")))
        #expect(manager.rule(for: "www.example.com").ruleName == "first")
        #expect(manager.rule(for: "anything.net").ruleName == "second")
        #expect(manager.rule(for: "10.0.0.1").ruleName == "second")
    }

    @Test func hostPatternSemantics() throws {
        let one = try HostPattern("*.example.com")
        #expect(one.kind == .singleLabelWildcard)
        #expect(one.matches("a.example.com"))
        #expect(!one.matches("a.b.example.com"))
        #expect(!one.matches("example.com"))
        #expect(!one.matches("aexample.com"))
        let deep = try HostPattern("**.example.com")
        #expect(deep.kind == .anyDepthWildcard)
        #expect(deep.matches("a.example.com"))
        #expect(deep.matches("a.b.c.example.com"))
        #expect(!deep.matches("example.com"))
        #expect(!deep.matches(".example.com"))
        let exact = try HostPattern("Example.com.")
        #expect(exact.matches("example.COM"))
        #expect(!exact.matches("www.example.com"))
        #expect(try HostPattern("**").matches("10.1.2.3"))
        #expect(!(try HostPattern("*.0.2.1")).matches("192.0.2.1"))
        for bad in ["", "*", "*.", "a.*.com", "ex*ample.com", "***.example.com", "*.*.example.com", "exa mple.com"] {
            #expect(throws: CertificateError.self, "\(bad)") { try HostPattern(bad) }
        }
        #expect(throws: CertificateError.self) {
            try ServerTrustManager(rules: [TrustRule(hosts: ["a.*"], evaluator: DisabledTrustEvaluator())],
                                   defaultRule: TrustRule(hosts: [], evaluator: DisabledTrustEvaluator()))
        }
    }

    func pinRule(mode: TrustMode = .enforce, pinsExpire: Int64? = nil) throws -> ServerTrustManager {
        let evaluator = CompositeTrustEvaluator([
            DefaultTrustEvaluator(trustStore: try pki.trustStore()),
            PublicKeysTrustEvaluator(pins: [pki.otherKey.publicKeyPin]),   // does not match pki.leaf
        ])
        return try ServerTrustManager(
            rules: [TrustRule(name: "pinned", hosts: ["**.example.test"], evaluator: evaluator, mode: mode, pinsExpire: pinsExpire)],
            defaultRule: TrustRule(hosts: [], evaluator: DefaultTrustEvaluator(trustStore: try pki.trustStore())))
    }

    @Test func enforcedPinMismatchBlocks() throws {
        let result = try pinRule().evaluate([pki.leaf, pki.intermediate], host: TestPKI.host, now: pki.now)
        #expect(!result.passed)
        #expect(result.reason == .pinMismatch)
        #expect(result.enforced)
        #expect(!result.allowsConnection)
        #expect(result.ruleName == "pinned")
        #expect(result.ruleIndex == 0)
        #expect(result.matchedPattern == "**.example.test")
        #expect(result.evaluatorName == "composite(default, public-keys)")
        #expect(result.presentedPins == [pki.leaf.spkiSHA256Pin, pki.intermediate.spkiSHA256Pin])
        #expect(result.mode == .enforce)
        #expect(!result.pinsExpired)
        #expect(result.description.contains("pin_mismatch, enforced"))
    }

    @Test func expiredPinSetIsReportedNotEnforced() throws {
        let manager = try pinRule(pinsExpire: pki.now - 1)
        let result = manager.evaluate([pki.leaf, pki.intermediate], host: TestPKI.host, now: pki.now)
        #expect(!result.passed)
        #expect(result.reason == .pinMismatch)
        #expect(result.pinsExpired)
        #expect(!result.enforced)
        #expect(result.allowsConnection)
        #expect(result.isReportedViolation)
        // Before the expiry the same pins are enforced.
        let before = manager.evaluate([pki.leaf, pki.intermediate], host: TestPKI.host, now: pki.now - 10)
        #expect(before.enforced && !before.allowsConnection)
        // Other failures stay enforced after pin expiry.
        let expiredChain = manager.evaluate([pki.expiredLeaf, pki.intermediate], host: TestPKI.host, now: pki.now)
        #expect(expiredChain.reason == .expired)
        #expect(expiredChain.enforced && !expiredChain.allowsConnection)
    }

    @Test func reportOnlyLetsFailuresPass() throws {
        let manager = try pinRule(mode: .reportOnly)
        let result = manager.evaluate([pki.leaf, pki.intermediate], host: TestPKI.host, now: pki.now)
        #expect(!result.passed)
        #expect(result.reason == .pinMismatch)
        #expect(!result.enforced)
        #expect(result.allowsConnection)
        #expect(result.mode == .reportOnly)
        let untrusted = manager.evaluate([pki.untrustedLeaf], host: TestPKI.host, now: pki.now)
        #expect(untrusted.reason == .untrustedRoot)
        #expect(untrusted.allowsConnection)
        #expect(TrustMode(rawValue: "report-only") == .reportOnly)
    }

    @Test func passingAndDefaultRule() throws {
        let evaluator = CompositeTrustEvaluator([
            DefaultTrustEvaluator(trustStore: try pki.trustStore()),
            PublicKeysTrustEvaluator(pins: [pki.otherKey.publicKeyPin, pki.leaf.publicKeyPin]),   // backup pin matches
        ])
        let manager = try ServerTrustManager(
            rules: [TrustRule(hosts: [TestPKI.host], evaluator: evaluator)],
            defaultRule: TrustRule(name: "system", hosts: [], evaluator: DefaultTrustEvaluator(trustStore: try pki.trustStore())))
        let result = manager.evaluate([pki.leaf, pki.intermediate], host: TestPKI.host, now: pki.now)
        #expect(result.passed && result.enforced && result.allowsConnection && result.error == nil)
        let fallback = manager.evaluate([pki.wrongHostLeaf, pki.intermediate], host: "other.example.test", now: pki.now)
        #expect(fallback.ruleName == "system")
        #expect(fallback.ruleIndex == nil)
        #expect(fallback.passed)
        let mismatch = manager.evaluate([pki.leaf, pki.intermediate], host: "elsewhere.test", now: pki.now)
        #expect(mismatch.reason == .hostnameMismatch)
        #expect(!mismatch.allowsConnection)
    }
}
