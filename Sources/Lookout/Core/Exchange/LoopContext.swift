import LookoutIO
import LookoutModel
import LookoutUpstream

/// What one event loop's exchanges share: the loop, its upstream pool, its exchanges and their
/// tasks, and the delegate their tasks report to. Touched only on that loop, so it needs no locks.
final class LoopContext: @unchecked Sendable {  // confined to `loop.queue`
    let loop: EventLoop
    let pool: UpstreamConnectionPool
    let taskMap = RequestTaskMap<Exchange, UpstreamTask>()
    /// Every upstream callback of this loop's tasks and tunnels passes through it.
    let delegate: SessionDelegate
    /// The requests of this loop's recent exchanges, to send again.
    let recentRequests = RecentRequests()
    /// The origins of this loop's recent plain proxied requests, shared by its client connections.
    var recentOrigins = RecentOrigins()

    init(loop: EventLoop, configuration: SessionConfiguration, delegate: (RequestTaskMap<Exchange, UpstreamTask>) -> SessionDelegate) {
        self.loop = loop
        self.delegate = delegate(taskMap)
        self.pool = UpstreamConnectionPool(loop: loop,
                                           maxIdlePerOrigin: configuration.maxIdleConnectionsPerOrigin,
                                           idleTimeout: configuration.poolIdleTimeout)
    }
}
