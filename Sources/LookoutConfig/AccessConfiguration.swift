import LookoutIO
import LookoutTLS

extension LookoutConfiguration {
    /// `access`: who may use the proxy and where it may go.
    public struct Access: Sendable, Equatable {
        /// `clients`: client address ranges (CIDRs or the names `IPNetwork.names`); empty = any client.
        public var clients: [IPNetwork] = []
        /// `allow_hosts`: destination host patterns; empty = every host.
        public var allowHosts: [HostPattern] = []
        /// `deny_hosts`: refused with 403 destination_denied (checked after `allow_hosts`).
        public var denyHosts: [HostPattern] = []
        /// `deny_networks`: destination address ranges refused after DNS (CIDRs or names).
        public var denyNetworks: [IPNetwork] = []
        /// `methods`: allowed request methods; empty = every method.
        public var methods: [String] = []
        public init() {}
    }

    /// Why this configuration would run an open proxy, or nil: a listener on an address other
    /// than loopback with neither `auth.users` nor `access.clients` set lets anyone who can reach
    /// it use it, so Lookout refuses to start that way.
    public var openProxyProblem: String? {
        guard auth.users.isEmpty, access.clients.isEmpty else { return nil }
        guard let exposed = listen.first(where: { !$0.isLoopback }) else { return nil }
        return "listening on \(exposed) (not a loopback address) would make an open proxy: set access.clients "
            + "(the client ranges allowed, e.g. [\"10.0.0.0/8\"]) or auth.users, or listen on 127.0.0.1"
    }
}

extension LookoutConfiguration {
    /// Why `admin.listen` must not be used as configured: the admin pages (cache purge, traffic
    /// counts) on a non-loopback address open to any client.
    public var adminExposureProblem: String? {
        guard access.clients.isEmpty else { return nil }
        guard let exposed = admin.listen.first(where: { !$0.isLoopback }) else { return nil }
        return "admin.listen on \(exposed) (not a loopback address) would open the admin pages to anyone: "
            + "set access.clients (the client ranges allowed), or listen on 127.0.0.1"
    }
}

extension LookoutConfiguration {
    /// Why the admin pages need `admin.token` and have none: they are reachable from clients
    /// other than loopback (a listener on such an address, and `access.clients` admitting more
    /// than loopback), where anyone who reaches them could read the traffic and cancel it.
    public var adminTokenProblem: String? {
        guard admin.token == nil else { return nil }
        // Transparent and SOCKS5 listeners serve no admin page.
        let pages = listen.filter { $0.mode == .proxy } + admin.listen
        guard let exposed = pages.first(where: { !$0.isLoopback }) else { return nil }
        let loopback = IPNetwork.named("loopback")!
        if !access.clients.isEmpty,
           access.clients.allSatisfy({ client in loopback.contains { client.isWithin($0) } }) {
            return nil
        }
        return "the admin pages on \(exposed) are reachable from other machines: set admin.token (or "
            + "\(Admin.tokenEnvironmentVariable)), or admit only loopback in access.clients, or listen on 127.0.0.1"
    }
}

extension ListenAddress {
    /// 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        guard let address = SocketAddress(ip: host, port: port) else { return false }
        return IPNetwork(cidr: "127.0.0.0/8")!.contains(address) || IPNetwork(cidr: "::1/128")!.contains(address)
    }
}
