import LookoutHTTP
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// Everything a `Session` needs to run, already validated (the config file maps onto this).
public struct SessionConfiguration: Sendable {
    /// Timeouts, in seconds.
    public typealias Timeouts = LookoutModel.Timeouts
    public typealias HTTP2 = HTTP2Settings

    public var http2 = HTTP2()

    /// "host:port" pairs to listen on; host is an IP literal.
    public var listen: [(host: String, port: Int)] = [("127.0.0.1", 8080)]
    /// `admin.listen`: extra addresses that serve only the admin pages (status, `/metrics`, cache),
    /// never proxy. The proxy addresses serve them too.
    public var adminListen: [(host: String, port: Int)] = []
    /// `listen` entries with `mode: transparent`: connections redirected here by nftables/iptables
    /// (REDIRECT or TPROXY), each sent on to its original destination.
    public var transparentListen: [(host: String, port: Int)] = []
    /// `listen` entries with `tls`: proxy listeners that speak TLS to their clients, each with its
    /// engine (its certificate, and the authorities of the client certificates it asks for).
    public var secureListen: [(host: String, port: Int, engine: TLSEngine)] = []
    /// `listen` entries with `mode: socks5`: SOCKS5 clients (RFC 1928).
    public var socksListen: [(host: String, port: Int)] = []
    /// 0 = one event loop per core.
    public var eventLoopCount = 0
    /// How long an idle event loop may poll before sleeping (`PollSpin`); 0 = never.
    public var eventLoopSpinMicroseconds = 50
    public var maxConnections = 4096
    public var parserLimits = HTTPParserLimits()
    /// 0 = unlimited.
    public var maxRequestBodyBytes: UInt64 = 0
    public var timeouts = Timeouts()
    public var allowedConnectPorts: Set<Int> = [443]
    public var maxIdleConnectionsPerOrigin = 64
    public var poolIdleTimeout: Double = 30
    public var dnsCacheTTL: Double = 30
    /// Adds `Via: 1.1 lookout` both ways (RFC 9110 §7.6.3).
    public var addVia = true
    /// Adds an RFC 7239 `Forwarded: for=…;proto=…` element to forwarded requests.
    public var addForwarded = false
    /// Per-host field edits (`headers.rules`); none = messages pass with only the hop-by-hop changes.
    public var headerRules = HostRuleSet<HeaderRule>.empty
    /// Who may use the proxy and where it may go (`access`); the default restricts nothing.
    public var access = AccessPolicy()
    /// Per-host parent proxies (`upstream_proxies.rules`; a rule's nil = direct) and the default.
    public var parentProxyRules = HostRuleSet<ParentProxy?>.empty
    public var defaultParentProxy: ParentProxy?
    /// Watch the route table (`reachability.enabled`) and, with `failFastWhenUnreachable`,
    /// refuse new exchanges to non-loopback destinations while there is no route out.
    public var reachabilityEnabled = false
    public var failFastWhenUnreachable = false

    /// The parent proxy requests to `host` go through, or nil for a direct connection.
    func parentProxy(for host: HostRuleKey) -> ParentProxy? {
        if let match = parentProxyRules.match(for: host) { return match.rule }
        return defaultParentProxy
    }
    /// "name:password" pairs clients must present (`Proxy-Authorization: Basic`); empty = open to every client.
    public var proxyCredentials: [String] = []
    /// Whether those credentials are mandatory (`auth.required`); when not, they only identify a
    /// client for the `policy`.
    public var proxyCredentialsRequired = true
    /// `policy`: roles by identity; nil = `access` alone decides.
    public var policy: EgressPolicy?
    /// `admin.token`: what every admin page but `/healthz` and `/proxy.pac` asks for; nil = nothing asked.
    public var adminToken: String?
    /// `pac.direct`: the hosts `/proxy.pac` sends straight to the origin.
    public var pacDirect: [HostPattern] = []
    /// Events waiting for one monitor before newer ones are dropped and counted.
    public var monitorQueueLimit = 65536
    /// TLS: trust rules, interception, versions.
    public var tls = TLSSettings()
    /// Where request bodies kept for replay spill to disk (files unlinked at creation).
    public var temporaryDirectory = "/tmp"
    /// Per-host redirect rules (`redirects.rules`); none = every redirect passes to the client.
    public var redirectRules = HostRuleSet<RedirectRule>.empty
    /// Per-host retry rules (`retry.rules`); none = only the stale pooled-connection retry.
    public var retryRules = HostRuleSet<RetryRule>.empty
    /// The shared cache (`cache`); nil = off.
    public var cache: CacheSettings?
    /// Body capture (`capture`); nil = no rules, nothing captured.
    public var capture: CaptureSettings?
    /// Map remote and map local rules (`map`); none = every request goes where it names.
    public var mapRules = MapRules()
    /// Per-host latency, bandwidth and faults (`shaping.rules`); none = nothing shaped.
    public var shapingRules = HostRuleSet<ShapingRule>.empty
    /// `breakpoints`: the bounds, and the rules the session starts with (more come at run time).
    public var breakpoints = BreakpointSettings()
    /// `hooks`, in the order they run.
    public var hooks: [HookSettings] = []
    /// `simulate`: answer from recordings.
    public var simulate = SimulateSettings()
    /// `messages`: what is read inside WebSockets, event streams and gRPC calls.
    public var messages = MessagesSettings()
    /// `otel`: exchanges traced (the trace stage, `traceparent` upstream); the export is a monitor's.
    public var otel = OTelSettings()
    /// `interception.learn_passthrough`: where the learned pairs are kept.
    public var passthrough: PassthroughStore?
    /// `audit`: the passive checks, when enabled: ids turned off everywhere and per host.
    public var audit: (disabled: Set<String>, rules: HostRuleSet<Set<String>>, certificateExpiryDays: Int)?

    public init() {}
}
