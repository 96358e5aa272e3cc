import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// The egress policy (`policy`) as a client connection asks it: the client's role from the name
/// it authenticated as and its address, then the decision for one request or tunnel.
extension ClientConnection {
    /// Nil without a policy. `method` nil: a tunnel; `limits`: count it against the role's rate
    /// and number in flight.
    func policyDecision(method: String?, host: HostRuleKey, limits: Bool = true) -> (PolicyDecision, ProxyError?)? {
        guard let policy = rules.policy else { return nil }
        let (role, identity) = policy.role(user: authenticatedUser, client: connection.peerAddress,
                                           certificateSubject: certificateSubject)
        return policy.decide(role, identity: identity, method: method, host: host, limits: limits)
    }

    /// Who the client is, for the streams of the HTTP/2 side it starts.
    var http2Identity: HTTP2ClientIdentity {
        HTTP2ClientIdentity(user: authenticatedUser, address: connection.peerAddress, certificateSubject: certificateSubject)
    }
}
