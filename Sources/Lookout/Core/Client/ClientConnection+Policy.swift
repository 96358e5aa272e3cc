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
        rules.policy.map { identity.decision(by: $0, method: method, host: host, limits: limits) }
    }

    /// Who the client is: for this connection's decisions and for the streams of an HTTP/2 side it starts.
    var identity: ClientIdentity {
        ClientIdentity(user: authenticatedUser, address: connection.peerAddress, certificateSubject: certificateSubject)
    }
}

