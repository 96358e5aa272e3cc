import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// Who a client is, for the egress policy's role: the `auth.users` name it authenticated as, its
/// address, and its TLS client certificate's subject. A connection knows it; an HTTP/2 side gets
/// the connection's, and a forward proxy's stream may name its own user.
struct ClientIdentity {
    let user: String?
    let address: SocketAddress?
    let certificateSubject: String?

    /// The same client, as a stream that authenticated as `user` (when it did).
    func streaming(as user: String?) -> ClientIdentity {
        guard let user else { return self }
        return ClientIdentity(user: user, address: address, certificateSubject: certificateSubject)
    }

    /// The policy's decision for one request (`method`) or tunnel (`method` nil) to `host`: the
    /// role first, then the rules; `limits`: count it against the role's rate and number in flight.
    func decision(by policy: EgressPolicy, method: String?, host: HostRuleKey, limits: Bool = true)
        -> (PolicyDecision, ProxyError?) {
        let (role, name) = policy.role(user: user, client: address, certificateSubject: certificateSubject)
        return policy.decide(role, identity: name, method: method, host: host, limits: limits)
    }
}
