/// The session's gauges at one moment: what the status page prints and `/metrics` exports.
/// Each value is read with a relaxed atomic load, so the set is not one consistent snapshot.
public struct SessionStatistics: Sendable {
    /// Accepted client connections not yet closed (proxy and admin listeners).
    public var openClientConnections: Int
    /// Upstream sockets connected and not yet closed: pooled idle ones, busy ones and tunnels'.
    public var openUpstreamConnections: Int
    public var exchangesInFlight: Int
    public var exchangesFinished: UInt64
    /// Events monitors lost because their mailbox was full (`log.queue_limit`).
    public var droppedEvents: UInt64
    /// The reachability status ("reachable_via_ethernet", …); nil when not watched.
    public var reachability: ReachabilityStatus?
    /// The shared cache's size; nil when the cache is off.
    public var cacheObjects: Int?
    public var cacheBytes: Int64?
    /// Unix time of the session's start, in seconds.
    public var startTimeSeconds: Double
    /// How many times the event loops polled before sleeping (`event_loop_spin_us`), and for how
    /// long in all, since the start.
    public var loopSpins: Int
    public var loopSpinNanoseconds: Int64

    public init(openClientConnections: Int = 0, openUpstreamConnections: Int = 0, exchangesInFlight: Int = 0,
                exchangesFinished: UInt64 = 0, droppedEvents: UInt64 = 0, reachability: ReachabilityStatus? = nil,
                cacheObjects: Int? = nil, cacheBytes: Int64? = nil, startTimeSeconds: Double = 0,
                loopSpins: Int = 0, loopSpinNanoseconds: Int64 = 0) {
        self.openClientConnections = openClientConnections
        self.openUpstreamConnections = openUpstreamConnections
        self.exchangesInFlight = exchangesInFlight
        self.exchangesFinished = exchangesFinished
        self.droppedEvents = droppedEvents
        self.reachability = reachability
        self.cacheObjects = cacheObjects
        self.cacheBytes = cacheBytes
        self.startTimeSeconds = startTimeSeconds
        self.loopSpins = loopSpins
        self.loopSpinNanoseconds = loopSpinNanoseconds
    }
}
