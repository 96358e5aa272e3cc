import LookoutTLS

/// `admin` and `metrics`: the admin pages and the Prometheus export.
extension LookoutConfiguration {
    public struct Admin: Sendable, Equatable {
        /// `listen`: extra addresses that serve only the admin pages (status, `/metrics`, cache);
        /// empty = the admin pages are on the proxy addresses only.
        public var listen: [ListenAddress] = []
        /// `token`: the secret every admin page but `/healthz` asks for (a bearer token, or once
        /// `?token=` that sets a cookie); nil = none. `LOOKOUT_ADMIN_TOKEN` overrides it.
        public var token: String?
        public init() {}

        /// The environment variable that sets (and overrides) `admin.token`.
        public static let tokenEnvironmentVariable = "LOOKOUT_ADMIN_TOKEN"

        /// Why `text` cannot be a token, or nil. A token travels in `Authorization: Bearer`, a
        /// query and a cookie, so it is RFC 6750's b64token (§2.1): letters, digits and `-._~+/`,
        /// then any `=`.
        public static func tokenProblem(_ text: String) -> String? {
            guard !text.isEmpty else { return "must not be empty" }
            let body = text.utf8.reversed().drop(while: { $0 == UInt8(ascii: "=") })
            guard !body.isEmpty, body.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || "-._~+/".utf8.contains(byte)
            }) else {
                return "may hold only letters, digits and - . _ ~ + / (then = padding), as a bearer token does (RFC 6750 §2.1)"
            }
            return nil
        }
    }

    public struct Metrics: Sendable, Equatable {
        /// `enabled`: count exchanges and serve `GET /metrics`.
        public var enabled = true
        /// `host_labels`: hosts (or patterns) whose series carry a `host` label; others are "other".
        public var hostLabels: [HostPattern] = []
        public init() {}
    }
}
