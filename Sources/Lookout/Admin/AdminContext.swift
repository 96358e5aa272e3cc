import LookoutAdmin
import LookoutIO
import LookoutModel
import LookoutTLS

/// What the admin pages need to answer, handed over by the session once: the endpoints served from
/// outside the core, the fixed facts the status page shows, the cache its endpoints work on, and
/// the credentials they ask for.
final class AdminContext: Sendable {
    let endpoints: [any AdminEndpoint]
    let startTime: Instant
    let loopCount: Int
    /// `event_loop_spin_us`.
    let spinMicroseconds: Int
    /// The shared cache (`cache.enabled`); nil when off.
    let cache: SharedCache?
    /// `auth.users`, asked for by the cache endpoints that change the store.
    let authenticator: ProxyAuthenticator?
    /// `admin.token`; nil when the pages ask for none.
    let tokenCheck: AdminTokenCheck?
    /// `pac.direct`: the hosts `/proxy.pac` sends straight to the origin.
    let pacDirect: [HostPattern]

    init(endpoints: [any AdminEndpoint], startTime: Instant, loopCount: Int, spinMicroseconds: Int, cache: SharedCache?,
         authenticator: ProxyAuthenticator?, tokenCheck: AdminTokenCheck?, pacDirect: [HostPattern] = []) {
        self.endpoints = endpoints
        self.startTime = startTime
        self.loopCount = loopCount
        self.spinMicroseconds = spinMicroseconds
        self.cache = cache
        self.authenticator = authenticator
        self.tokenCheck = tokenCheck
        self.pacDirect = pacDirect
    }
}

/// What the admin pages read of the running session when they answer: its gauges, the route
/// to the outside, and the running exchanges (to list or cancel them).
protocol AdminStatusSource: ExchangeOperator, BreakpointOperator {
    var statistics: SessionStatistics { get }
    /// The reachability status and the default route's interface; nil when not watched.
    var reachabilitySnapshot: (status: String, interface: String?)? { get }
    /// `POST /capture/namespaces`: transparent listeners in another process's network namespace.
    func captureNamespace(body: [UInt8]) -> AdminAnswer
    /// The first SOCKS5 listener's address, which `/proxy.pac` names as the fallback; nil without one.
    var socksListener: String? { get }
    /// `POST /admin/reload`.
    func reloadFromAdmin() -> AdminAnswer
}
