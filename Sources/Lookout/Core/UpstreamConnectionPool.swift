import LookoutIO

/// Idle upstream connections of one event loop, by origin. Bounded per origin; each idle
/// connection expires after `idleTimeout`. Per loop, so taking and returning need no locks.
///
/// Expiry is one sweeping timer per pool, not a timer per release: re-arming a Dispatch timer on
/// every returned connection costs a wake-up of Dispatch's manager thread per request.
final class UpstreamConnectionPool: @unchecked Sendable {  // confined to `loop.queue`
    private let loop: EventLoop
    private let maxIdlePerOrigin: Int
    private let idleTimeout: Double
    private var idle: [Origin: [UpstreamConnection]] = [:]
    private let sweeper: LoopTimer

    init(loop: EventLoop, maxIdlePerOrigin: Int, idleTimeout: Double) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
        self.idleTimeout = idleTimeout
        self.sweeper = LoopTimer(loop: loop)
    }

    /// The most recently used idle connection to `origin`, if any.
    func take(_ origin: Origin) -> UpstreamConnection? {
        // Mutated in place (a copy out of the dictionary would be reallocated); an emptied list
        // stays until the next sweep, so an origin in steady use keeps its storage.
        while let connection = idle[origin]?.popLast() {
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
        guard idle[connection.origin, default: []].count < maxIdlePerOrigin else {
            connection.close()
            return
        }
        connection.idleSince = .now()
        idle[connection.origin, default: []].append(connection)
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
            for connection in list {
                let idleFor = now.milliseconds(since: connection.idleSince) / 1000
                if idleFor + 0.001 >= idleTimeout {
                    connection.pool = nil
                    connection.close()
                } else {
                    kept.append(connection)
                    nextExpiry = min(nextExpiry ?? .infinity, idleTimeout - idleFor)
                }
            }
            idle[origin] = kept.isEmpty ? nil : kept
        }
        if let nextExpiry { scheduleSweep(after: nextExpiry) }
    }

    func remove(_ connection: UpstreamConnection) {
        guard var list = idle[connection.origin], let index = list.firstIndex(where: { $0 === connection }) else { return }
        list.remove(at: index)
        idle[connection.origin] = list.isEmpty ? nil : list
        connection.pool = nil
    }

    func closeAll() {
        for list in idle.values { list.forEach { $0.close() } }
        idle.removeAll()
        sweeper.cancel()
    }
}
