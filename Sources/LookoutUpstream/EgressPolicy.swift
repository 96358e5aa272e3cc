import LookoutIO
import LookoutModel
import LookoutTLS
import Synchronization

/// The egress policy (`policy`): a client's role from who it is, and for each request or tunnel
/// whether its role lets it go — host patterns (deny first, then allow; nothing allowed by
/// default), methods, a request rate and a number in flight. A `report` role forwards what
/// `enforce` would refuse, and says so. Immutable but for the roles' counters, which every loop
/// shares (so the limits hold across loops exactly).
public final class EgressPolicy: Sendable {
    public struct Role: Sendable {
        public let name: String
        public let enforces: Bool
        public let allow: HostRuleSet<String>
        public let deny: HostRuleSet<String>
        public let methods: [String]
        public let bucket: TokenBucket?
        public let slots: PolicySlots?

        public init(name: String, enforces: Bool, allow: [HostPattern], deny: [HostPattern], methods: [String],
                    rate: (perSecond: Double, burst: Int)?, maxConcurrent: Int?) {
            self.name = name
            self.enforces = enforces
            self.allow = HostRuleSet(allow.map { ([$0], $0.text) })
            self.deny = HostRuleSet(deny.map { ([$0], $0.text) })
            self.methods = methods
            bucket = rate.map { TokenBucket(perSecond: $0.perSecond, burst: $0.burst) }
            slots = maxConcurrent.map(PolicySlots.init(limit:))
        }

        var mode: String { enforces ? "enforce" : "report" }
    }

    public enum Identity: Sendable {
        case user(String, role: String)
        case clients([IPNetwork], role: String)
        /// The RFC 2253 subject of the client's certificate (a TLS listener's `client_ca`).
        case certificateSubject(String, role: String)
    }

    public let roles: [String: Role]
    public let identities: [Identity]
    public let defaultRole: String

    public init(roles: [Role], identities: [Identity], defaultRole: String) {
        self.roles = Dictionary(roles.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.identities = identities
        self.defaultRole = defaultRole
    }

    /// The role of a client: the first identity that matches (`user`: the name it
    /// authenticated as; `client`: its address; `certificateSubject`: its TLS client
    /// certificate's), else the default role.
    public func role(user: String?, client: SocketAddress?, certificateSubject: String? = nil) -> (role: Role, identity: String) {
        for identity in identities {
            switch identity {
            case .certificateSubject(let subject, let role) where subject == certificateSubject:
                if let found = roles[role] { return (found, "cert:\(subject)") }
            case .user(let name, let role) where name == user:
                if let found = roles[role] { return (found, "user:\(name)") }
            case .clients(let networks, let role):
                if let client, networks.contains(where: { $0.contains(client) }), let found = roles[role] {
                    return (found, "client:\(client.ipText)")
                }
            default:
                continue
            }
        }
        return (roles[defaultRole]!, "default")
    }

    /// What the role decides for `method` to `host` (`method` nil: a tunnel, whose requests
    /// cannot be seen), and the refusal to answer with when it refuses. `limits`: count it
    /// against the rate and the number in flight (a CONNECT that is intercepted is not counted:
    /// its requests are).
    public func decide(_ role: Role, identity: String, method: String?, host: HostRuleKey, limits: Bool = true)
        -> (decision: PolicyDecision, refusal: ProxyError?) {
        var rule: String
        var reason: String
        var refusal: ProxyError?
        if let denied = role.deny.match(for: host) {
            (rule, reason, refusal) = ("deny:\(denied.rule)", "\(host.normalized) matches a deny pattern", .accessDenied(reason: .policyDenied))
        } else if let allowed = role.allow.match(for: host) {
            (rule, reason) = ("allow:\(allowed.rule)", "\(host.normalized) matches an allow pattern")
            if let method, !role.methods.isEmpty, !role.methods.contains(method) {
                (rule, reason, refusal) = ("methods", "method \(method) is not one of the role's methods", .accessDenied(reason: .policyDenied))
            }
        } else {
            (rule, reason, refusal) = ("default", "\(host.normalized) matches no allow pattern", .accessDenied(reason: .policyDenied))
        }
        var slot: PolicySlots?
        if refusal == nil && limits {
            if let bucket = role.bucket, let wait = bucket.take() {
                (rule, reason, refusal) = ("rate", "over the role's rate", .accessDenied(reason: .rateLimited(retryAfter: wait)))
            } else if let slots = role.slots {
                if slots.take() {
                    slot = slots
                } else {
                    (rule, reason, refusal) = ("max_concurrent", "the role's max_concurrent is reached",
                                               .accessDenied(reason: .concurrencyLimited(limit: slots.limit)))
                }
            }
        }
        let refused = refusal != nil
        let decision = PolicyDecision(role: role.name, identity: identity, mode: role.mode,
                                      decision: refused && role.enforces ? "deny" : "allow", wouldDeny: refused && !role.enforces,
                                      rule: rule, reason: reason, slot: slot)
        return (decision, role.enforces ? refusal : nil)
    }
}

/// A token bucket (`rate`): `perSecond` tokens a second, at most `burst` kept. One lock, shared
/// by every loop.
public final class TokenBucket: Sendable {
    private let perSecond: Double
    private let burst: Double
    private let state: Mutex<(tokens: Double, last: UInt64)>

    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = Double(burst)
        state = Mutex((Double(burst), Instant.now().nanoseconds))
    }

    /// Takes a token: nil when there was one, else the whole seconds until there is.
    public func take() -> Int? {
        take(at: Instant.now().nanoseconds)
    }

    /// `take()` with the clock as read by the caller (`now`, in monotonic nanoseconds).
    func take(at now: UInt64) -> Int? {
        state.withLock { state -> Int? in
            // Read before the lock: another loop that read the clock later may have been first.
            // Its time stands, and this take refills nothing (a wrapped difference would refill
            // the whole burst).
            if now > state.last {
                state.tokens = min(burst, state.tokens + Double(now - state.last) / 1e9 * perSecond)
                state.last = now
            }
            guard state.tokens >= 1 else { return max(1, Int(((1 - state.tokens) / perSecond).rounded(.up))) }
            state.tokens -= 1
            return nil
        }
    }
}
