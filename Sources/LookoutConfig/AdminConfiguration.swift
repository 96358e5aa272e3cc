import LookoutTLS

/// `admin` and `metrics`: the admin pages and the Prometheus export.
extension LookoutConfiguration {
    public struct Admin: Sendable, Equatable {
        /// `listen`: extra addresses that serve only the admin pages (status, `/metrics`, cache);
        /// empty = the admin pages are on the proxy addresses only.
        public var listen: [ListenAddress] = []
        public init() {}
    }

    public struct Metrics: Sendable, Equatable {
        /// `enabled`: count exchanges and serve `GET /metrics`.
        public var enabled = true
        /// `host_labels`: hosts (or patterns) whose series carry a `host` label; others are "other".
        public var hostLabels: [HostPattern] = []
        public init() {}
    }
}
