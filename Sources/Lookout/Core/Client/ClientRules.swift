import LookoutUpstream

/// Who a client is and what its role lets it do: `auth` and `policy`, the parts of the
/// configuration a reload replaces while connections run. Each loop keeps the current one
/// (`LoopContext.rules`), read at the start of every exchange and tunnel; what started under the
/// old one finishes under it.
final class ClientRules: Sendable {
    /// `auth.users`; nil when no credentials are asked for.
    let authenticator: ProxyAuthenticator?
    /// Whether credentials are mandatory, or only identify a client for `policy`.
    let credentialsRequired: Bool
    /// `policy`; nil when `access` alone decides.
    let policy: EgressPolicy?

    init(authenticator: ProxyAuthenticator?, credentialsRequired: Bool, policy: EgressPolicy?) {
        self.authenticator = authenticator
        self.credentialsRequired = credentialsRequired
        self.policy = policy
    }

    convenience init(_ configuration: SessionConfiguration) {
        self.init(authenticator: ProxyAuthenticator(credentials: configuration.proxyCredentials),
                  credentialsRequired: configuration.proxyCredentialsRequired, policy: configuration.policy)
    }
}
