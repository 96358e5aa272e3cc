import Testing
@testable import LookoutConfig

/// The `policy` section and `auth.required`.
struct EgressPolicyConfigTests {
    @Test func theIssuesShapeLoads() throws {
        let config = try load("""
            auth:
              users: ["ci-bot:pw"]
            policy:
              identities:
                - {role: ci,      user: "ci-bot"}
                - {role: laptops, clients: ["10.20.0.0/16"]}
              default_role: unknown
              roles:
                ci:      {mode: report,  allow: ["**.github.com", "pypi.org"], rate: {requests_per_second: 50, burst: 100}}
                laptops: {mode: enforce, allow: ["**.internal.example"], deny: [], methods: [GET, POST], max_concurrent: 20}
                unknown: {mode: enforce, allow: []}
            """)
        #expect(config.policy.roles.map(\.name) == ["ci", "laptops", "unknown"])
        #expect(config.policy.roles[0].mode == .report && config.policy.roles[0].rate == .init(requestsPerSecond: 50, burst: 100))
        #expect(config.policy.roles[1].maxConcurrent == 20 && config.policy.roles[1].methods == ["GET", "POST"])
        #expect(config.policy.defaultRole == "unknown" && config.policy.identities.count == 2)
        #expect(config.auth.required == nil)
    }

    @Test func badPoliciesNameTheirKey() {
        #expect(error("policy:\n  default_role: x\n  roles:\n    a: {}\n")?.contains("policy.default_role: names role \"x\"") == true)
        #expect(error("policy:\n  default_role: a\n  roles:\n    a: {rate: {requests_per_second: 0}}\n")?
            .contains("policy.roles.a.rate.requests_per_second: must be a number above 0") == true)
        #expect(error("policy:\n  default_role: a\n  roles:\n    a: {allow: [\"*.co.uk\"]}\n")?
            .contains("covers every domain under the public suffix co.uk") == true)
        #expect(error("policy:\n  default_role: a\n  roles:\n    a: {mode: shadow}\n")?.contains("expected enforce or report") == true)
        #expect(error("policy:\n  roles:\n    a: {}\n")?.contains("a policy needs default_role") == true)
        #expect(error("policy:\n  identities: [{role: a, user: x, clients: [\"10.0.0.0/8\"]}]\n  default_role: a\n  roles:\n    a: {}\n")?
            .contains("exactly one of user, clients") == true)
        #expect(error("auth:\n  required: maybe\n")?.contains("auth.required: expected true or false") == true)
    }
}
