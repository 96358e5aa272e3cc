import LookoutIO
import LookoutTLS
import LookoutModel

/// Who may use the proxy and where it may go (`access`): checked on every accepted connection, on
/// every proxied request head, and on every address an upstream connection is actually made to,
/// so a name that resolves (or is rebound) into a denied network, an IP literal written another
/// way, or a followed redirect cannot get around it.
public struct AccessPolicy: Sendable {
    /// Client ranges allowed; empty = any client that can connect.
    public var clients: [IPNetwork] = []
    /// Destination host patterns allowed; empty = every host.
    public var allowHosts = HostRuleSet<String>.empty
    public var restrictsHosts = false
    /// Destination host patterns refused (checked after `allowHosts`).
    public var denyHosts = HostRuleSet<String>.empty
    /// Destination address ranges refused, after DNS.
    public var denyNetworks: [IPNetwork] = []
    /// Methods allowed, in the order written (the `Allow` of a 405); empty = every method.
    public var methods: [String] = []

    public init() {}

    /// Nil when `address` may use the proxy.
    public func refusal(forClient address: SocketAddress) -> ProxyError? {
        guard !clients.isEmpty, !clients.contains(where: { $0.contains(address) }) else { return nil }
        return .accessDenied(reason: .clientNotAllowed(client: address.description))
    }

    /// Nil when a request with `method` to `host` may go on.
    public func refusal(method: String, host: HostRuleKey) -> ProxyError? {
        if !methods.isEmpty && !methods.contains(method) {
            return .accessDenied(reason: .methodNotAllowed(method: method, allowed: methods))
        }
        return refusal(forHost: host)
    }

    /// Nil when `host` may be a destination.
    public func refusal(forHost host: HostRuleKey) -> ProxyError? {
        if restrictsHosts && allowHosts.match(for: host) == nil {
            return .accessDenied(reason: .destinationDenied(host: host.normalized, pattern: nil))
        }
        if let denied = denyHosts.match(for: host) {
            return .accessDenied(reason: .destinationDenied(host: host.normalized, pattern: denied.rule))
        }
        return nil
    }

    /// The denied range `address` lies in, if any.
    public func deniedNetwork(for address: SocketAddress) -> IPNetwork? {
        denyNetworks.first { $0.contains(address) }
    }

}
