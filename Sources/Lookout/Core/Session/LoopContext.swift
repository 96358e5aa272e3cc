import LookoutIO
import LookoutModel
import LookoutUpstream

/// The per-loop half of a `Session`: state only that loop touches, so it needs no locks.
final class LoopContext: @unchecked Sendable {  // confined to `loop.queue`
    let loop: EventLoop
    let pool: UpstreamConnectionPool
    let taskMap = RequestTaskMap<Exchange, UpstreamTask>()
    /// Every upstream callback of this loop's tasks and tunnels passes through it.
    let delegate: SessionDelegate
    /// Open client connections by id, for shutdown and the status page.
    var clients: [UInt64: ClientConnection] = [:]

    init(loop: EventLoop, configuration: SessionConfiguration, delegate: (RequestTaskMap<Exchange, UpstreamTask>) -> SessionDelegate) {
        self.loop = loop
        self.delegate = delegate(taskMap)
        self.pool = UpstreamConnectionPool(loop: loop,
                                           maxIdlePerOrigin: configuration.maxIdleConnectionsPerOrigin,
                                           idleTimeout: configuration.poolIdleTimeout)
    }
}
