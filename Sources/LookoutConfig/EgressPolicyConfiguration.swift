import LookoutIO
import LookoutTLS

extension LookoutConfiguration {
    /// `policy`: egress policy by identity. Each client gets a role (the first identity that
    /// matches it, else `default_role`), and the role says where it may go, how, and how often.
    public struct Policy: Sendable, Equatable {
        /// `identities`: tried in order; the first that matches names the role.
        public var identities: [PolicyIdentity] = []
        /// `default_role`: the role of a client no identity matches.
        public var defaultRole: String = ""
        /// `roles`, in file order.
        public var roles: [PolicyRole] = []
        public init() {}

        /// Whether a `policy` section was given (without one, `access` alone decides).
        public var isConfigured: Bool { !roles.isEmpty }
    }
}

/// One `policy.identities[i]`: how a client is recognised, and the role it then has.
public struct PolicyIdentity: Sendable, Equatable {
    public enum Match: Sendable, Equatable {
        /// `user`: the name in the client's `auth.users` credentials (proxy auth, or SOCKS5).
        case user(String)
        /// `clients`: the client's source address ranges.
        case clients([IPNetwork])
        /// `client_cert_subject`: the RFC 2253 subject ("CN=billing,O=corp") of the certificate
        /// the client presented to a TLS listener (`listen[i].tls.client_ca`).
        case certificateSubject(String)
    }

    public var role: String
    public var match: Match

    public init(role: String, match: Match) {
        self.role = role
        self.match = match
    }
}

/// One `policy.roles.NAME`.
public struct PolicyRole: Sendable, Equatable {
    /// `enforce` refuses what the role does not allow; `report` forwards it and records
    /// `would_deny` (shadow mode, before enforcing).
    public enum Mode: String, Sendable, CaseIterable {
        case enforce, report
    }

    public var name: String
    public var mode: Mode = .enforce
    /// `allow`: host patterns the role may reach; empty = none (default deny).
    public var allow: [HostPattern] = []
    /// `deny`: host patterns refused even when `allow` matches.
    public var deny: [HostPattern] = []
    /// `methods`: the methods allowed; empty = every method.
    public var methods: [String] = []
    /// `rate`: a token bucket, `requests_per_second` refilled up to `burst`.
    public var rate: Rate?
    /// `max_concurrent`: exchanges and tunnels in flight at once.
    public var maxConcurrent: Int?

    public struct Rate: Sendable, Equatable {
        public var requestsPerSecond: Double
        public var burst: Int
        public init(requestsPerSecond: Double, burst: Int) {
            self.requestsPerSecond = requestsPerSecond
            self.burst = burst
        }
    }

    public init(name: String) {
        self.name = name
    }
}
