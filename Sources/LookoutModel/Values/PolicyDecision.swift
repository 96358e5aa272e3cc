import Synchronization

/// The summary record's `policy` object: who the client was taken for, and what the egress
/// policy (`policy`) decided for this exchange or tunnel, and why.
public struct PolicyDecision: Sendable {
    /// The role the client got (`policy.roles`).
    public var role: String
    /// What gave the role: `user:NAME`, `client:ADDRESS` (a `clients` range), or `default`.
    public var identity: String
    /// `enforce` or `report`.
    public var mode: String
    /// `allow` or `deny`: what happened (a report-mode role forwards what it would refuse).
    public var decision: String
    /// A report-mode role would have refused it.
    public var wouldDeny: Bool
    /// What decided: `allow:PATTERN`, `deny:PATTERN`, `default` (no allow pattern), `methods`,
    /// `rate`, `max_concurrent`, or `deny_networks`.
    public var rule: String
    /// The reason, in words.
    public var reason: String
    /// The role's in-flight count this exchange holds a place in, given back when its record is
    /// written (nil when it holds none).
    public var slot: PolicySlots?

    public init(role: String, identity: String, mode: String, decision: String, wouldDeny: Bool, rule: String,
                reason: String, slot: PolicySlots? = nil) {
        self.role = role
        self.identity = identity
        self.mode = mode
        self.decision = decision
        self.wouldDeny = wouldDeny
        self.rule = rule
        self.reason = reason
        self.slot = slot
    }
}

/// A role's exchanges and tunnels in flight, counted across every loop (`max_concurrent`).
public final class PolicySlots: Sendable {
    public let limit: Int
    private let inFlight = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = limit
    }

    /// Takes a place; false (and nothing taken) when all are taken.
    public func take() -> Bool {
        var current = inFlight.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = inFlight.compareExchange(expected: current, desired: current + 1,
                                                                 ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    public func giveBack() {
        inFlight.subtract(1, ordering: .acquiringAndReleasing)
    }

    public var count: Int { inFlight.load(ordering: .relaxed) }
}
