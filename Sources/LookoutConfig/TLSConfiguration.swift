import LookoutTLS

extension LookoutConfiguration {
    /// `tls`: protocol settings shared by the client side (interception) and the upstream side.
    public struct TLS: Sendable, Equatable {
        /// `minimum_version`: the lowest TLS version accepted from clients and origins.
        public var minimumVersion: TLSProtocolVersion

        public init(minimumVersion: TLSProtocolVersion = .tls12) {
            self.minimumVersion = minimumVersion
        }
    }

    /// `interception`: which CONNECT tunnels Lookout terminates with leaves from its local CA.
    public struct Interception: Sendable, Equatable {
        /// `hosts`: host patterns to intercept; empty = every CONNECT stays a blind tunnel.
        public var hosts: [HostPattern]
        /// `leaf_cache_size`: minted leaf certificates kept for reuse (least recently used go first).
        public var leafCacheSize: Int
        /// `learn_passthrough`: a client that refuses Lookout's certificate is tunnelled blindly
        /// from its next connection on (per client JA4 and host, kept under `state_dir`).
        public var learnPassthrough = false

        public init(hosts: [HostPattern] = [], leafCacheSize: Int = 1024) {
            self.hosts = hosts
            self.leafCacheSize = leafCacheSize
        }

        /// Whether any host is intercepted (and so the CA is needed).
        public var isEnabled: Bool { !hosts.isEmpty }
    }
}
