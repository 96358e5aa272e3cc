import LookoutIO

/// Idle upstream connections of one event loop, by origin. Bounded per origin; each idle
/// connection expires after `idleTimeout`. Per loop, so taking and returning need no locks.
///
/// Expiry is one sweeping timer per pool, not a timer per release: re-arming a Dispatch timer on
/// every returned connection costs a wake-up of Dispatch's manager thread per request.
final class UpstreamConnectionPool: @unchecked Sendable {  // confined to `loop.queue`
    /// One origin's idle connections, most recently used last. A class, so taking and returning
    /// change it in place: mutating an array inside the dictionary cost allocations per request.
    private final class IdleList {
        var connections: [UpstreamConnection] = []
    }

    private let loop: EventLoop
    private let maxIdlePerOrigin: Int
    private let idleTimeout: Double
    /// Emptied lists stay until the next sweep, so an origin in steady use keeps its storage.
    private var idle: [Origin: IdleList] = [:]
    private let sweeper: LoopTimer

    init(loop: EventLoop, maxIdlePerOrigin: Int, idleTimeout: Double) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
        self.idleTimeout = idleTimeout
        self.sweeper = LoopTimer(loop: loop)
    }

    /// The most recently used idle connection to `origin`, if any.
    func take(_ origin: Origin) -> UpstreamConnection? {
        guard let list = idle[origin] else { return nil }
        while let connection = list.connections.popLast() {
            connection.pool = nil
            if connection.isUsable { return connection }
            connection.close()
        }
        return nil
    }

    /// Keeps `connection` for reuse, or closes it when the origin already has enough idle ones.
    func release(_ connection: UpstreamConnection) {
        connection.detach()
        guard connection.isUsable, maxIdlePerOrigin > 0 else {
            connection.close()
            return
        }
        let list: IdleList
        if let existing = idle[connection.origin] {
            list = existing
        } else {
            list = IdleList()
            idle[connection.origin] = list
        }
        guard list.connections.count < maxIdlePerOrigin else {
            connection.close()
            return
        }
        connection.idleSince = .now()
        list.connections.append(connection)
        connection.pool = self
        if !sweeper.isArmed { scheduleSweep(after: idleTimeout) }
    }

    private func scheduleSweep(after seconds: Double) {
        sweeper.schedule(after: seconds) { [unowned self] in sweep() }
    }

    /// Closes the connections idle for `idleTimeout`; comes back for the next one to expire.
    private func sweep() {
        let now = Instant.now()
        var nextExpiry: Double?
        for (origin, list) in idle {
            var kept: [UpstreamConnection] = []
            for connection in list.connections {
                let idleFor = now.milliseconds(since: connection.idleSince) / 1000
                if idleFor + 0.001 >= idleTimeout {
                    connection.pool = nil
                    connection.close()
                } else {
                    kept.append(connection)
                    nextExpiry = min(nextExpiry ?? .infinity, idleTimeout - idleFor)
                }
            }
            if kept.isEmpty {
                idle[origin] = nil
            } else {
                list.connections = kept
            }
        }
        if let nextExpiry { scheduleSweep(after: nextExpiry) }
    }

    func remove(_ connection: UpstreamConnection) {
        guard let list = idle[connection.origin],
              let index = list.connections.firstIndex(where: { $0 === connection }) else { return }
        list.connections.remove(at: index)
        connection.pool = nil
    }

    func closeAll() {
        for list in idle.values { list.connections.forEach { $0.close() } }
        idle.removeAll()
        sweeper.cancel()
    }
}
