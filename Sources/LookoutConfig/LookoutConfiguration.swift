import LookoutTLS
import LookoutModel
import Foundation

/// Lookout's configuration as plain, validated values.
///
/// `LookoutConfiguration()` holds every default from the shared contract
/// (documented key by key in `config/lookout.yaml`); `ConfigurationLoader` builds one from a YAML file,
/// starting from these defaults and replacing what the file sets.
///
/// This module depends on no other Lookout module: the lead maps these values
/// onto the runtime's own types.
public struct LookoutConfiguration: Sendable, Equatable {
    /// `listen`: the addresses to accept clients on. Port 0 means "the kernel picks".
    public var listen: [ListenAddress]
    /// `state_dir`: the folder for files Lookout owns. A leading `~` has been expanded.
    public var stateDirectory: String
    /// `event_loops`: 0 means one per core (the runtime resolves it).
    public var eventLoops: Int
    /// `event_loop_spin_us`: how long an event loop with nothing to do may poll before sleeping,
    /// while traffic is dense and no thread waits for a CPU; 0 = never.
    public var eventLoopSpinMicroseconds: Int
    /// `max_connections`: concurrent client connections.
    public var maxConnections: Int
    /// `limits`
    public var limits: Limits
    /// `timeouts`
    public var timeouts: Timeouts
    /// `connect`
    public var connect: Connect
    /// `pool`
    public var pool: Pool
    /// `dns`
    public var dns: DNS
    /// `headers`
    public var headers: Headers
    /// `auth`
    public var auth: Auth
    /// `log`
    public var log: Log
    /// `tls`
    public var tls: TLS
    /// `interception`
    public var interception: Interception
    /// `trust`
    public var trust: Trust
    /// `redirects`
    public var redirects = Redirects()
    /// `access`
    public var access = Access()
    /// `policy`: egress policy by identity (roles, modes, limits).
    public var policy = Policy()
    /// `config_watch`: reload the file when it changes (as SIGHUP does).
    public var configWatch = false
    /// `upstream_proxies`
    public var upstreamProxies = UpstreamProxies()
    /// `reachability`
    public var reachability = Reachability()
    /// `cache`
    public var cache = Cache()
    /// `capture`
    public var capture = Capture()
    /// `admin`
    public var admin = Admin()
    /// `metrics`
    public var metrics = Metrics()
    /// `ui`
    public var ui = UI()
    /// `pac`
    public var pac = PAC()

    /// `pac`: the proxy auto-config file each proxy listener serves at `/proxy.pac`.
    public struct PAC: Sendable, Equatable {
        /// `direct`: the hosts a browser using the file reaches without the proxy.
        public var direct: [HostPattern] = []
    }
    /// `http2`
    public var http2 = HTTP2()

    /// `reachability`: watch the route table; refuse early while there is no route out.
    public struct Reachability: Sendable, Equatable {
        /// `enabled`: watch link and route changes (an rtnetlink socket, no polling).
        public var enabled = true
        /// `fail_fast`: while there is no default route, new exchanges to non-loopback
        /// destinations get 503 network_unreachable at once.
        public var failFast = false
        public init() {}
    }
    /// `retry`
    public var retry = Retry()
    /// `map`: map remote and map local rules.
    public var map = Map()
    /// `shaping`: per-host latency, bandwidth and faults.
    public var shaping = Shaping()
    /// `breakpoints`: pause exchanges for an operator to edit (`max_held`, `max_body_bytes`, `rules`).
    public var breakpoints = BreakpointSettings()
    /// `hooks`: external programs or endpoints that see, change, answer or abort exchanges.
    public var hooks: [HookSettings] = []
    /// `simulate`: answer from recordings (Lookout logs or HAR files).
    public var simulate = SimulateSettings()
    /// `messages`: WebSocket messages, event streams and gRPC messages read as they pass.
    public var messages = MessagesSettings()
    /// `grpc.descriptor_sets`: `protoc --descriptor_set_out` files, read; the UI names gRPC
    /// methods and fields with them.
    public var grpcDescriptorSets: [DescriptorSetFile] = []
    /// `otel`: traces and logs to an OpenTelemetry Collector (the `OTEL_*` variables win).
    public var otel = OTelSettings()
    /// `audit`: passive security findings.
    public var audit = Audit()

    /// The defaults. `stateDirectory` is `~/.lookout` expanded against `$HOME`
    /// (or the user's home folder when `$HOME` is not set).
    public init() {
        self.init(home: ConfigurationLoader.homeDirectory(environment: ProcessInfo.processInfo.environment))
    }

    /// The defaults, with `~` expanded against `homeDirectory`.
    public init(homeDirectory: String) {
        self.init(home: homeDirectory)
    }

    /// The defaults; `state_dir` keeps its `~` when `home` is nil.
    init(home: String?) {
        listen = [ListenAddress(host: "127.0.0.1", port: 8080)]
        stateDirectory = ConfigurationLoader.expandTilde(
            LookoutConfiguration.defaultStateDirectory, home: home) ?? LookoutConfiguration.defaultStateDirectory
        eventLoops = 0
        eventLoopSpinMicroseconds = 50
        maxConnections = 4096
        limits = Limits()
        timeouts = Timeouts()
        connect = Connect()
        pool = Pool()
        dns = DNS()
        headers = Headers()
        auth = Auth()
        log = Log()
        tls = TLS()
        interception = Interception()
        trust = Trust()
    }

    /// `state_dir` as written in the defaults, before `~` is expanded.
    public static let defaultStateDirectory = "~/.lookout"

    /// `limits`: sizes of what a client may send. All in bytes, except `maxHeaderCount`.
    public struct Limits: Sendable, Equatable {
        /// `max_request_line_bytes`: over -> 414.
        public var maxRequestLineBytes: Int
        /// `max_header_bytes`: the whole head including the start line; over -> 431.
        public var maxHeaderBytes: Int
        /// `max_header_count`: over -> 431.
        public var maxHeaderCount: Int
        /// `max_request_body_bytes`: 0 = unlimited; over -> 413.
        public var maxRequestBodyBytes: Int

        public init(
            maxRequestLineBytes: Int = 8192,
            maxHeaderBytes: Int = 65536,
            maxHeaderCount: Int = 128,
            maxRequestBodyBytes: Int = 0
        ) {
            self.maxRequestLineBytes = maxRequestLineBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.maxHeaderCount = maxHeaderCount
            self.maxRequestBodyBytes = maxRequestBodyBytes
        }
    }

    /// `timeouts`: modelled once, in LookoutModel, for the reader and the session alike.
    public typealias Timeouts = LookoutModel.Timeouts

    /// `connect`: the CONNECT method.
    public struct Connect: Sendable, Equatable {
        /// `allowed_ports`: CONNECT to any other port -> 403. Empty = CONNECT refused everywhere.
        public var allowedPorts: [Int]

        public init(allowedPorts: [Int] = [443]) {
            self.allowedPorts = allowedPorts
        }
    }

    /// `pool`: idle upstream connections kept for reuse.
    public struct Pool: Sendable, Equatable {
        /// `max_idle_per_origin`: per event loop; 0 = no connection is kept for reuse.
        public var maxIdlePerOrigin: Int
        /// `idle_timeout`: seconds an idle pooled connection is kept.
        public var idleTimeout: Double

        public init(maxIdlePerOrigin: Int = 64, idleTimeout: Double = 30) {
            self.maxIdlePerOrigin = maxIdlePerOrigin
            self.idleTimeout = idleTimeout
        }
    }

    /// `dns`
    public struct DNS: Sendable, Equatable {
        /// `cache_ttl`: seconds; 0 disables the cache.
        public var cacheTTL: Double

        public init(cacheTTL: Double = 30) {
            self.cacheTTL = cacheTTL
        }
    }

    /// `auth`: proxy authentication of clients.
    public struct Auth: Sendable, Equatable {
        /// `users`: "name:password" pairs accepted in `Proxy-Authorization: Basic`; empty = no authentication.
        public var users: [String]
        /// `required`: whether credentials are mandatory. Unset: yes, unless a `policy` is
        /// configured (then they identify a client, and one without them gets a role by address).
        public var required: Bool?

        public init(users: [String] = [], required: Bool? = nil) {
            self.users = users
            self.required = required
        }

        /// The user names of `users`.
        public var names: [String] { users.map { String($0.prefix { $0 != ":" }) } }
    }

    /// `headers`
    public struct Headers: Sendable, Equatable {
        /// `via`: add `Via: 1.1 lookout` to forwarded requests and responses.
        public var via: Bool
        /// `forwarded`: add an RFC 7239 `Forwarded: for=…;proto=…` element to forwarded requests
        /// (after any the client sent).
        public var forwarded: Bool
        /// `rules`: per-host field edits for requests and responses.
        public var rules: [HeaderRuleSettings]

        public init(via: Bool = true, forwarded: Bool = false, rules: [HeaderRuleSettings] = []) {
            self.via = via
            self.forwarded = forwarded
            self.rules = rules
        }
    }

    /// `log`: the JSON-lines event log.
    public struct Log: Sendable, Equatable {
        /// `enabled`: false = no traffic log at all (operational messages still go to stderr).
        public var enabled: Bool
        /// `path`: "-" = stdout, else a file appended to. A leading `~` has been expanded.
        public var path: String
        /// `verbose`: true = every lifecycle event, false = one summary per exchange.
        public var verbose: Bool
        /// `reveal_secrets`: false = credential header values are written as "[redacted]".
        public var revealSecrets: Bool
        /// `include_headers`: include request/response header maps in summary records.
        public var includeHeaders: Bool
        /// `queue_limit`: records buffered for the writer; beyond that they are dropped and counted.
        public var queueLimit: Int

        public init(
            enabled: Bool = true,
            path: String = "-",
            verbose: Bool = false,
            revealSecrets: Bool = false,
            includeHeaders: Bool = false,
            queueLimit: Int = 65536
        ) {
            self.enabled = enabled
            self.path = path
            self.verbose = verbose
            self.revealSecrets = revealSecrets
            self.includeHeaders = includeHeaders
            self.queueLimit = queueLimit
        }

        /// True when `path` is "-" (write to standard output).
        public var isStandardOutput: Bool { path == "-" }
    }
}
