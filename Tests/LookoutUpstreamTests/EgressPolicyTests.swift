import LookoutIO
import LookoutModel
import LookoutTLS
@testable import LookoutUpstream
import Testing

/// `EgressPolicy`: roles by identity, the order of its checks, report mode, and its limits.
struct EgressPolicyTests {
    static func policy(limit: Int? = nil, rate: (Double, Int)? = nil, enforces: Bool = true) throws -> EgressPolicy {
        let billing = EgressPolicy.Role(name: "billing", enforces: enforces, allow: [try HostPattern("**.internal.example")],
                                        deny: [try HostPattern("db.internal.example")], methods: ["GET"],
                                        rate: rate, maxConcurrent: limit)
        let unknown = EgressPolicy.Role(name: "unknown", enforces: true, allow: [], deny: [], methods: [], rate: nil,
                                        maxConcurrent: nil)
        return EgressPolicy(roles: [billing, unknown],
                            identities: [.user("bill", role: "billing"),
                                         .clients([IPNetwork.parseList(entry: "10.0.0.0/8")!].flatMap { $0 }, role: "billing")],
                            defaultRole: "unknown")
    }

    @Test func identitiesNameTheRoleInOrder() throws {
        let policy = try Self.policy()
        #expect(policy.role(user: "bill", client: nil).identity == "user:bill")
        #expect(policy.role(user: nil, client: SocketAddress(ip: "10.1.2.3", port: 5)).identity == "client:10.1.2.3")
        #expect(policy.role(user: "someone", client: SocketAddress(ip: "192.0.2.1", port: 5)).role.name == "unknown")
    }

    @Test func denyThenAllowThenMethods() throws {
        let policy = try Self.policy()
        let (role, identity) = policy.role(user: "bill", client: nil)
        func decide(_ method: String?, _ host: String) -> (String, String, Bool) {
            let (decision, refusal) = policy.decide(role, identity: identity, method: method, host: HostRuleKey(host))
            return (decision.decision, decision.rule, refusal != nil)
        }
        #expect(decide("GET", "api.internal.example") == ("allow", "allow:**.internal.example", false))
        #expect(decide("GET", "db.internal.example") == ("deny", "deny:db.internal.example", true))
        #expect(decide("POST", "api.internal.example") == ("deny", "methods", true))
        #expect(decide(nil, "api.internal.example") == ("allow", "allow:**.internal.example", false))  // a tunnel
        #expect(decide("GET", "example.com") == ("deny", "default", true))
    }

    @Test func reportModeForwardsWhatItWouldRefuse() throws {
        let policy = try Self.policy(enforces: false)
        let (role, identity) = policy.role(user: "bill", client: nil)
        let (decision, refusal) = policy.decide(role, identity: identity, method: "GET", host: HostRuleKey("example.com"))
        #expect(refusal == nil && decision.decision == "allow" && decision.wouldDeny && decision.mode == "report")
    }

    @Test func placesInFlightAreTakenAndGivenBack() throws {
        let policy = try Self.policy(limit: 2)
        let (role, identity) = policy.role(user: "bill", client: nil)
        let host = HostRuleKey("api.internal.example")
        let first = policy.decide(role, identity: identity, method: "GET", host: host)
        let second = policy.decide(role, identity: identity, method: "GET", host: host)
        let third = policy.decide(role, identity: identity, method: "GET", host: host)
        #expect(first.refusal == nil && second.refusal == nil)
        #expect(third.refusal == .accessDenied(reason: .concurrencyLimited(limit: 2)) && third.decision.rule == "max_concurrent")
        first.decision.slot?.giveBack()
        #expect(policy.decide(role, identity: identity, method: "GET", host: host).refusal == nil)
    }

    @Test func theBucketLetsTheBurstThroughThenAsksToWait() {
        let bucket = TokenBucket(perSecond: 0.5, burst: 3)
        #expect((0..<3).allSatisfy { _ in bucket.take() == nil })
        #expect(bucket.take() == 2)  // half a token a second: two seconds to the next
    }

    /// Two loops read the clock, and the later reader takes the lock first: the earlier time must
    /// not count as a wrapped-around age that refills the whole burst.
    @Test func aClockReadBeforeAnotherTakeRefillsNothing() {
        let bucket = TokenBucket(perSecond: 1, burst: 2)
        let start = Instant.now().nanoseconds
        #expect(bucket.take(at: start + 10) == nil && bucket.take(at: start + 20) == nil)
        #expect(bucket.take(at: start + 30) == 1)
        #expect(bucket.take(at: start + 25) == 1, "earlier than the last take: no refill")
        #expect(bucket.take(at: start + 1_000_000_030) == nil, "a second later, one token")
    }
}
