import LookoutTLS

extension LookoutConfiguration {
    /// `redirects`: what Lookout does with 3xx responses, per host.
    public struct Redirects: Sendable, Equatable {
        /// `rules`: matched most specific first, like trust rules; a host no rule names has its
        /// redirects passed to the client unchanged.
        public var rules: [RedirectRuleSettings] = []
        public init() {}
    }

    /// `retry`: which failed attempts are made again, per host.
    public struct Retry: Sendable, Equatable {
        public var rules: [RetryRuleSettings] = []
        public init() {}
    }
}

/// One `redirects.rules[i]`.
public struct RedirectRuleSettings: Sendable, Equatable {
    /// `{from, to}` of one `rewrite` entry: a `Location` starting with `from` has it replaced by `to`.
    public struct Rewrite: Sendable, Equatable {
        public var from: String
        public var to: String
        public init(from: String, to: String) {
            self.from = from
            self.to = to
        }
    }

    public var hosts: [HostPattern] = []
    /// `follow` (default false: pass the 3xx to the client unchanged).
    public var follow = false
    /// `max_hops` (default 10): followed redirects per exchange; one more is 502 redirect_limit_exceeded.
    public var maxHops = 10
    /// `allow_downgrade` (default false): an https URL may redirect to http (else 502 redirect_downgrade_refused).
    public var allowDowngrade = false
    /// `allow_cross_host` (default true): follow to another host (false passes such a 3xx on).
    public var allowCrossHost = true
    /// `rewrite`: `Location` prefixes rewritten before the 3xx is passed or followed.
    public var rewrites: [Rewrite] = []

    public init() {}
}

/// One `retry.rules[i]`.
public struct RetryRuleSettings: Sendable, Equatable {
    /// The error codes a rule may list under `errors`: failures of the upstream that can be tried again.
    public static let retryableErrors = [
        "upstream_dns_failed", "upstream_connect_failed", "upstream_connect_timeout", "upstream_first_byte_timeout",
        "upstream_idle_timeout", "upstream_closed", "upstream_malformed_response", "upstream_tls_handshake_failed",
        "upstream_tls_handshake_timed_out",
    ]

    public var hosts: [HostPattern] = []
    /// `limit` (default 0): extra attempts after the first.
    public var limit = 0
    /// `methods` (default the idempotent ones, RFC 9110 §9.2.2).
    public var methods = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]
    /// `statuses` (default 502, 503, 504; 429 only when listed).
    public var statuses = [502, 503, 504]
    /// `errors` (default connect failures and timeouts, and an origin closing before its response).
    public var errors = ["upstream_connect_failed", "upstream_connect_timeout", "upstream_closed"]
    /// `backoff.base`, `backoff.multiplier`, `backoff.max` (seconds), `backoff.jitter`.
    public var backoffBase = 0.2
    public var backoffMultiplier = 2.0
    public var backoffMax = 5.0
    public var jitter = true
    /// `retry_after` (default true): wait as a retried response's Retry-After says.
    public var retryAfter = true
    /// `max_retry_after` (default 30 s): the longest Retry-After wait honoured.
    public var maxRetryAfter = 30.0
    /// `replay_body_bytes` (default 10 MiB): request bodies up to this size are kept to be sent again.
    public var replayBodyBytes = 10_485_760
    /// `resume` (default false): a GET response that breaks off mid-body is asked for again from
    /// where it broke (`Range`, `If-Range`) and spliced, when it had a strong validator.
    public var resume = false
    /// `max_resumes` (default 3): resumptions of one response.
    public var maxResumes = 3

    public init() {}
}
