import LookoutIO
import LookoutModel
import LookoutUpstream

/// What one event loop's exchanges share: the loop, its upstream pool, and the sink of its
/// upstream events. Touched only on that loop, so it needs no locks.
final class LoopContext: @unchecked Sendable {  // confined to `loop.queue`
    let loop: EventLoop
    let pool: UpstreamConnectionPool
    /// This loop's connecting, trust and tunnel events pass through it to the monitors.
    let delegate: SessionDelegate
    /// The requests of this loop's recent exchanges, to send again.
    let recentRequests = RecentRequests()
    /// The origins of this loop's recent plain proxied requests, shared by its client connections.
    var recentOrigins = RecentOrigins()
    /// The current `auth` and `policy` (a reload replaces it here, on the loop).
    var rules: ClientRules
    /// The environment of the running configuration, which each new exchange and tunnel takes (a
    /// reload replaces it here, on the loop).
    var clients: ClientEnvironment

    init(loop: EventLoop, configuration: SessionConfiguration, clients: ClientEnvironment, delegate: SessionDelegate) {
        self.loop = loop
        self.clients = clients
        self.delegate = delegate
        self.rules = ClientRules(configuration)
        self.pool = UpstreamConnectionPool(loop: loop,
                                           maxIdlePerOrigin: configuration.maxIdleConnectionsPerOrigin,
                                           idleTimeout: configuration.poolIdleTimeout)
    }
}
