import LookoutIO
import LookoutModel

/// Idle upstream connections of one event loop, by origin. Bounded per origin; each idle
/// connection expires after `idleTimeout`. Per loop, so taking and returning need no locks.
///
/// HTTP/2 connections are kept here too, but shared rather than taken: a task opens a stream on
/// one with room (RFC 9113 §9.1). While a connection to an origin that may speak HTTP/2 is being
/// opened, other tasks for that origin wait to see what it negotiates instead of opening their own.
///
/// Expiry is one sweeping timer per pool, not a timer per release: re-arming a Dispatch timer on
/// every returned connection costs a wake-up of Dispatch's manager thread per request.
package final class UpstreamConnectionPool: @unchecked Sendable {  // confined to `loop.queue`
    /// One origin's idle connections, most recently used last. A class, so taking and returning
    /// change it in place: mutating an array inside the dictionary cost allocations per request.
    private final class IdleList {
        package var connections: [UpstreamConnection] = []
    }

    package let loop: EventLoop
    private let maxIdlePerOrigin: Int
    private let idleTimeout: Double
    /// Emptied lists stay until the next sweep, so an origin in steady use keeps its storage.
    private var idle: [Origin: IdleList] = [:]
    private let sweeper: LoopTimer
    /// HTTP/2 connections that take new streams, by origin.
    private var multiplexed: [Origin: [HTTP2UpstreamConnection]] = [:]
    /// Origins with a connection being opened that may turn out to speak HTTP/2, and the tasks
    /// waiting to see whether it does.
    private var opening: [Origin: [@Sendable () -> Void]] = [:]
    /// https origins that chose HTTP/1.1 in ALPN: their tasks do not wait for each other.
    private var http1Origins: Set<Origin> = []
    private static let maxRememberedOrigins = 4096
    /// Connections opened before this were judged by trust rules that have changed: none is kept.
    private var retiredBefore: Instant?

    package init(loop: EventLoop, maxIdlePerOrigin: Int, idleTimeout: Double) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
        self.idleTimeout = idleTimeout
        self.sweeper = LoopTimer(loop: loop)
    }

    /// The most recently used idle connection to `origin`, if any.
    package func take(_ origin: Origin) -> UpstreamConnection? {
        guard let list = idle[origin] else { return nil }
        while let connection = list.connections.popLast() {
            connection.pool = nil
            if connection.isUsable { return connection }
            connection.close()
        }
        return nil
    }

    /// Keeps `connection` for reuse, or closes it when the origin already has enough idle ones.
    package func release(_ connection: UpstreamConnection) {
        connection.detach()
        let retired = retiredBefore.map { connection.openedAt.nanoseconds < $0.nanoseconds } ?? false
        guard connection.isUsable, maxIdlePerOrigin > 0, !retired else {
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

    package func remove(_ connection: UpstreamConnection) {
        guard let list = idle[connection.origin],
              let index = list.connections.firstIndex(where: { $0 === connection }) else { return }
        list.connections.remove(at: index)
        connection.pool = nil
    }

    /// Closes the idle connections. HTTP/2 connections may be carrying streams of exchanges
    /// still finishing: `graceful` retires them, closing each (with GOAWAY) once its streams are done.
    /// The trust rules or TLS settings changed: every connection open now was judged by the old
    /// ones, so the idle ones close, the HTTP/2 ones take no new stream, and those in use close
    /// when their exchange is done with them.
    package func retireOpened() {
        retiredBefore = .now()
        for list in idle.values { list.connections.forEach { $0.close() } }
        idle.removeAll()
        let shared = Array(multiplexed.values.joined())
        multiplexed.removeAll()
        for connection in shared {
            connection.pool = nil
            connection.retire()
        }
    }

    package func closeAll(graceful: Bool) {
        for list in idle.values { list.connections.forEach { $0.close() } }
        idle.removeAll()
        sweeper.cancel()
        let shared = Array(multiplexed.values.joined())
        multiplexed.removeAll()
        for connection in shared {
            connection.pool = nil
            if graceful { connection.retire() } else { connection.close(reason: "shutdown") }
        }
    }

    // MARK: - HTTP/2

    /// An HTTP/2 connection to `origin` that can take another stream now.
    package func multiplexedConnection(for origin: Origin) -> HTTP2UpstreamConnection? {
        multiplexed[origin]?.first { $0.hasRoom }
    }

    package func add(_ connection: HTTP2UpstreamConnection) {
        connection.pool = self
        multiplexed[connection.origin, default: []].append(connection)
    }

    /// Takes the connection out once it goes away or fails.
    package func remove(_ connection: HTTP2UpstreamConnection) {
        guard var list = multiplexed[connection.origin],
              let index = list.firstIndex(where: { $0 === connection }) else { return }
        list.remove(at: index)
        multiplexed[connection.origin] = list.isEmpty ? nil : list
        connection.pool = nil
    }

    /// Whether `origin` answered a TLS handshake with HTTP/1.1 before.
    package func speaksOnlyHTTP1(_ origin: Origin) -> Bool { http1Origins.contains(origin) }

    /// Whether a connection to `origin` that may speak HTTP/2 is being opened.
    package func isOpening(_ origin: Origin) -> Bool { opening[origin] != nil }

    /// The caller opens a connection to `origin`; tasks coming meanwhile wait for it.
    package func beginOpening(_ origin: Origin) {
        if opening[origin] == nil { opening[origin] = [] }
    }

    /// `resume` runs (on a later turn of the loop) once the opening connection has negotiated or failed.
    package func waitForOpening(_ origin: Origin, resume: @escaping @Sendable () -> Void) {
        opening[origin, default: []].append(resume)
    }

    /// The connection being opened to `origin` is ready (or failed, `speaksHTTP2` nil): waiting
    /// tasks go on, finding the HTTP/2 connection in the pool or opening their own.
    package func finishOpening(_ origin: Origin, speaksHTTP2: Bool?) {
        if speaksHTTP2 == false {
            if http1Origins.count >= Self.maxRememberedOrigins { http1Origins.removeAll() }
            http1Origins.insert(origin)
        } else if speaksHTTP2 == true {
            http1Origins.remove(origin)
        }
        guard let waiting = opening.removeValue(forKey: origin), !waiting.isEmpty else { return }
        loop.execute { for resume in waiting { resume() } }
    }
}
