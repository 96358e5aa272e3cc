import LookoutAdmin
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// What lives as long as the session, whatever its configuration becomes: the monitors, the
/// counts and ids, the resolver, the breakpoints and the held exchanges, the embedder's own
/// policies, and what the status page says of the loops.
struct SessionParts: Sendable {
    let monitor: CompositeEventMonitor
    let counters: ExchangeCounters
    let resolver: Resolver
    let openUpstreamConnections: OpenConnectionCounter
    let networkUnreachable: @Sendable () -> Bool
    let shuttingDown: @Sendable () -> Bool
    let planner: StagePlanner
    let adapters: [any RequestAdapter]
    /// The embedder's policies; nil: the configured rules.
    let redirectHandler: RedirectHandler?
    let cachedResponseHandler: CachedResponseHandler?
    let retrier: RequestRetrier?
    let breakpoints: Breakpoints
    let adminEndpoints: [any AdminEndpoint]
    let startTime: Instant
    let loopCount: Int
    let spinMicroseconds: Int
}

/// One configuration's worth of what connections are given: the environments of client
/// connections, exchanges and the upstream side, and the parts built from that configuration
/// (trust, TLS engines, hooks, recordings, cache rules). A reload makes a new one, reusing the
/// parts of sections that did not change; connections take it for their next exchange or tunnel,
/// and what started under the old one finishes under it (it lives as long as they hold it).
final class SessionGeneration: Sendable {
    let configuration: SessionConfiguration
    let clients: ClientEnvironment
    let hooks: Hooks
    let simulation: Simulation?
    let trustManager: ServerTrustManager
    let upstreamTLS: TLSEngine
    let upstreamTLSHTTP1: TLSEngine
    let interceptionTLS: TLSEngine?
    let cache: SharedCache?
    let captureStore: BodyCaptureStore?

    var exchanges: ExchangeEnvironment { clients.exchanges }

    /// Builds the parts of `configuration`, taking from `previous` those of the sections not in
    /// `changed` (every part is built when there is no previous generation).
    init(configuration: SessionConfiguration, parts: SessionParts, previous: SessionGeneration? = nil,
         changed: Set<String> = []) throws {
        func reuses(_ sections: String...) -> Bool { previous != nil && sections.allSatisfy { !changed.contains($0) } }
        let monitor = parts.monitor
        self.configuration = configuration
        if let previous, reuses("trust", "tls") {
            trustManager = previous.trustManager
        } else {
            // Judges every upstream certificate chain by the host's rule.
            trustManager = try configuration.tls.trustManager ?? ServerTrustManager(
                rules: [], defaultRule: TrustRule(hosts: [], evaluator: DefaultTrustEvaluator(trustStore: TrustStore())))
        }
        if let previous, reuses("tls", "http2") {
            (upstreamTLS, upstreamTLSHTTP1) = (previous.upstreamTLS, previous.upstreamTLSHTTP1)
        } else {
            (upstreamTLS, upstreamTLSHTTP1) = try Self.upstreamEngines(configuration)
        }
        if let previous, reuses("tls", "interception", "http2") {
            interceptionTLS = previous.interceptionTLS
        } else {
            interceptionTLS = try Self.interceptionEngine(configuration)
        }
        // The store is the session's: a reload changes its rules, never the store (a new path or
        // size waits for a restart).
        cache = try previous.map { $0.cache } ?? configuration.cache.map { settings in
            try SharedCache(settings: settings, handler: parts.cachedResponseHandler ?? ResponseCacher(rules: settings.rules),
                            monitor: monitor)
        }
        let cacheHandler = parts.cachedResponseHandler ?? configuration.cache.map { ResponseCacher(rules: $0.rules) }
        if let previous, reuses("capture") {
            captureStore = previous.captureStore
        } else {
            captureStore = try configuration.capture.map { capture in
                try BodyCaptureStore(directory: capture.directory, maxTotalBytes: capture.maxTotalBytes)
            }
        }
        if let previous, reuses("simulate") {
            simulation = previous.simulation
        } else {
            simulation = try Simulation(settings: configuration.simulate)
        }
        if let previous, reuses("hooks") {
            hooks = previous.hooks
        } else {
            hooks = try Hooks(settings: configuration.hooks) { [monitor] hook, reason, backoff in
                guard monitor.wants(HookDidRestart.interest) else { return }
                monitor.post(LookoutEvent(EventContext(connectionID: 0), HookDidRestart(hook: hook, reason: reason,
                                                                                        backoffMilliseconds: backoff)))
            }
        }
        // The configured rules unless the embedder brings its own policies.
        let redirectHandler = parts.redirectHandler ?? RedirectPolicy(rules: configuration.redirectRules)
        let retrier = parts.retrier ?? RetryPolicy(rules: configuration.retryRules)
        let authenticator = ProxyAuthenticator(credentials: configuration.proxyCredentials)
        let upstream = UpstreamEnvironment(
            timeouts: configuration.timeouts, parserLimits: configuration.parserLimits, http2: configuration.http2,
            poolIdleTimeout: configuration.poolIdleTimeout, tls: upstreamTLS, tlsHTTP1: upstreamTLSHTTP1,
            trustManager: trustManager, resolver: parts.resolver, access: configuration.access,
            failFastWhenUnreachable: configuration.failFastWhenUnreachable, openConnections: parts.openUpstreamConnections,
            networkUnreachable: parts.networkUnreachable, shuttingDown: parts.shuttingDown)
        let stagePlan = parts.planner(StagePlanParts(
            configuration: configuration, captureStore: captureStore, cache: cache, cacheHandler: cacheHandler,
            breakpoints: parts.breakpoints, hooks: hooks, simulation: simulation, adapters: parts.adapters,
            redirectHandler: redirectHandler, retrier: retrier))
        let exchanges = ExchangeEnvironment(
            configuration: configuration, monitor: monitor, counters: parts.counters, upstream: upstream,
            stagePlan: stagePlan, cache: cache, retrier: retrier, redirectHandler: redirectHandler,
            asksForCredentials: authenticator != nil)
        let admin = AdminContext(endpoints: parts.adminEndpoints, startTime: parts.startTime, loopCount: parts.loopCount,
                                 spinMicroseconds: parts.spinMicroseconds, cache: cache, authenticator: authenticator,
                                 tokenCheck: configuration.adminToken.map(AdminTokenCheck.init(token:)),
                                 pacDirect: configuration.pacDirect)
        clients = ClientEnvironment(configuration: configuration, exchanges: exchanges, admin: admin,
                                    interceptionTLS: interceptionTLS, trustManager: trustManager,
                                    passthrough: previous.flatMap { reuses("interception") ? $0.clients.passthrough : nil }
                                        ?? configuration.passthrough)
    }

    /// The engines that originate TLS toward https origins: one offering `h2` then `http/1.1`
    /// (with `http2.upstream`), and one offering only `http/1.1` for requests that ask for a
    /// protocol switch, which HTTP/2 does not have (RFC 9113 §8.6). RFC 7301 §3.1: in preference
    /// order; the origin picks.
    private static func upstreamEngines(_ configuration: SessionConfiguration) throws -> (TLSEngine, TLSEngine) {
        let http1Only = try TLSEngine(configuration: .client(minimumVersion: configuration.tls.minimumVersion,
                                                             applicationProtocols: ["http/1.1"]))
        let upstreamTLS = configuration.http2.upstream
            ? try TLSEngine(configuration: .client(minimumVersion: configuration.tls.minimumVersion,
                                                   applicationProtocols: ["h2", "http/1.1"]))
            : http1Only
        return (upstreamTLS, http1Only)
    }

    /// The engine that terminates intercepted clients' TLS with leaves from the local CA; nil
    /// without interception. RFC 7301 §3.2: the server picks by its own preference, so h2 wins
    /// when offered.
    private static func interceptionEngine(_ configuration: SessionConfiguration) throws -> TLSEngine? {
        guard !configuration.tls.interceptedHosts.isEmpty else { return nil }
        guard let authority = configuration.tls.certificateAuthority else {
            throw TLSError(kind: .invalidConfiguration, reason: "interception needs a certificate authority")
        }
        return try TLSEngine(configuration: .server(
            minimumVersion: configuration.tls.minimumVersion,
            applicationProtocols: configuration.http2.client ? ["h2", "http/1.1"] : ["http/1.1"],
            certificateSelector: { name in
                guard let name else {
                    throw CertificateError(.invalidHost, "the client sent no server name")
                }
                return try authority.issueLeaf(for: name)
            }))
    }
}
