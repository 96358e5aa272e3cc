import LookoutModel
import LookoutTLS
import LookoutUpstream
import Synchronization

/// What exchanges, tunnels and background revalidations need of the session, handed over as
/// values once: the monitors, the stage plan, the cache, the policies that decide about request
/// bodies, limits, the parent proxies, and the counters and ids the status page and the records
/// use. Nothing here is the session.
final class ExchangeEnvironment: Sendable {
    let monitor: CompositeEventMonitor
    /// What the upstream side (tasks, opener, pool) is given.
    let upstream: UpstreamEnvironment
    let stagePlan: any StagePlanning
    /// The shared cache (`cache.enabled`); nil when off.
    let cache: SharedCache?
    let retrier: RequestRetrier
    /// Some retry rule resumes broken GET responses (`resume: true`).
    let resumesResponses: Bool
    let redirectHandler: RedirectHandler
    /// Lookout asks clients for credentials (`auth.users`): a client's own `Proxy-Authorization`
    /// is then Lookout's, never passed to a parent.
    let asksForCredentials: Bool
    /// `limits.max_request_body_bytes`; 0 = unlimited.
    let maxRequestBodyBytes: UInt64
    /// Where request bodies kept for another attempt spill to disk.
    let temporaryDirectory: String
    /// `shaping.rules`, for tunnels (exchanges get theirs through the stage plan).
    let shapingRules: HostRuleSet<ShapingRule>
    /// The configuration, for what is looked up per host (`upstream_proxies`).
    private let configuration: SessionConfiguration
    /// The session's counts and ids, shared by every configuration a reload makes.
    let counters: ExchangeCounters

    init(configuration: SessionConfiguration, monitor: CompositeEventMonitor, counters: ExchangeCounters,
         upstream: UpstreamEnvironment, stagePlan: any StagePlanning, cache: SharedCache?, retrier: RequestRetrier,
         redirectHandler: RedirectHandler, asksForCredentials: Bool) {
        self.monitor = monitor
        self.counters = counters
        self.upstream = upstream
        self.stagePlan = stagePlan
        self.cache = cache
        self.retrier = retrier
        self.resumesResponses = retrier.resumesResponses
        self.redirectHandler = redirectHandler
        self.asksForCredentials = asksForCredentials
        self.maxRequestBodyBytes = configuration.maxRequestBodyBytes
        self.temporaryDirectory = configuration.temporaryDirectory
        self.shapingRules = configuration.shapingRules
        self.configuration = configuration
    }

    func makeRequestID() -> UInt64 { counters.nextRequestID.add(1, ordering: .relaxed).oldValue }
    func makeTaskID() -> UInt64 { counters.nextTaskID.add(1, ordering: .relaxed).oldValue }

    /// Posts an event, building it only if some monitor wants its kind.
    @inline(__always) func emit<Kind: EventKind>(_ context: @autoclosure () -> EventContext, _ make: @autoclosure () -> Kind) {
        if monitor.wants(Kind.interest) { monitor.post(LookoutEvent(context(), make())) }
    }

    /// The parent proxy a host is reached through (`upstream_proxies`).
    func parentProxy(for host: HostRuleKey) -> ParentProxy? { configuration.parentProxy(for: host) }

    var isShuttingDown: Bool { upstream.isShuttingDown }
}

/// The counts and ids of the whole session: a reload makes new environments, and the ids go on
/// and the gauges keep counting what started under the old one.
final class ExchangeCounters: Sendable {
    /// Started and not finished (the status page, `/metrics`).
    let exchangesInFlight = Atomic<Int>(0)
    let exchangesFinished = Atomic<UInt64>(0)
    let nextRequestID = Atomic<UInt64>(1)
    let nextTaskID = Atomic<UInt64>(1)
}
