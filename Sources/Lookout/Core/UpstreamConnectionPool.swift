import LookoutIO

/// Idle upstream connections of one event loop, by origin. Bounded per origin; each idle
/// connection expires after `idleTimeout`. Per loop, so taking and returning need no locks.
final class UpstreamConnectionPool: @unchecked Sendable {  // confined to `loop.queue`
    private let loop: EventLoop
    private let maxIdlePerOrigin: Int
    private let idleTimeout: Double
    private var idle: [Origin: [UpstreamConnection]] = [:]

    init(loop: EventLoop, maxIdlePerOrigin: Int, idleTimeout: Double) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
        self.idleTimeout = idleTimeout
    }

    /// The most recently used idle connection to `origin`, if any.
    func take(_ origin: Origin) -> UpstreamConnection? {
        while var list = idle[origin], let connection = list.popLast() {
            idle[origin] = list.isEmpty ? nil : list
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
        var list = idle[connection.origin] ?? []
        guard list.count < maxIdlePerOrigin else {
            connection.close()
            return
        }
        list.append(connection)
        idle[connection.origin] = list
        connection.pool = self
        connection.timer.schedule(after: idleTimeout) { [weak self, unowned connection] in
            self?.remove(connection)
            connection.close()
        }
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
    }

    var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }
}
