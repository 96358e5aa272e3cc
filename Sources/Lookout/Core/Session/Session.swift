import Dispatch
import LookoutHTTP
import LookoutIO
import LookoutSync
import LookoutTLS
import Logging
import Synchronization
import LookoutAdmin
import LookoutModel
import LookoutUpstream
#if canImport(Glibc)
import Glibc
#endif

/// The proxy: owns the listeners, the event loops, the upstream pools, the policies and the
/// monitors, and turns every accepted client connection into exchanges.
public final class Session: @unchecked Sendable {  // immutable after init, except the listeners (start/shutdown, main thread) and atomics
    public static let version = LookoutVersion.string

    public let configuration: SessionConfiguration
    public let monitor: CompositeEventMonitor
    public let redirectHandler: RedirectHandler
    public let retrier: RequestRetrier
    let logger: Logger
    /// What outlives every configuration: monitors, counts, resolver, breakpoints, the embedder's parts.
    let parts: SessionParts
    /// The running configuration's environments and parts; a reload replaces it (`Session+Reload.swift`).
    let generation: Guarded<SessionGeneration>
    /// What exchanges, tunnels and their upstream side are given now, as values.
    var exchanges: ExchangeEnvironment { generation.withLock { $0.exchanges } }
    /// What client connections are given now, as values.
    var clients: ClientEnvironment { generation.withLock { $0.clients } }
    /// Each loop's open client connections.
    let registries: [ClientRegistry]

    let group: EventLoopGroup
    let contexts: [LoopContext]
    let acceptQueue = DispatchQueue(label: "lookout.accept")
    /// `lookout exec --transparent`'s namespaces, by the pid that asked (`Session+Capture.swift`).
    let namespaceCaptures = Guarded<[Int32: NamespaceCapture]>([:])
    /// Reads the config file again and applies what may change live (`POST /admin/reload`,
    /// SIGHUP, `config_watch`); set by the embedder. Its argument names the trigger.
    public let reloader = Guarded<(@Sendable (String) -> ReloadOutcome)?>(nil)
    private var listeners: [Listener] = []
    /// Every bound listener's address, for transparent connections' loop check (set in `start`,
    /// before any listener accepts; read on the accept queue).
    private(set) var ownAddresses: [SocketAddress] = []
    /// The first bound SOCKS5 listener (set in `start`), for `/proxy.pac`.
    private(set) var socksListener: String?
    /// The breakpoints and the exchanges they hold (`breakpoints`, `/breakpoints`).
    let breakpoints: Breakpoints
    /// The external hooks (`hooks`) of the running configuration.
    var hooks: Hooks { generation.withLock { $0.hooks } }
    /// The recordings answered from (`simulate`); nil when off.
    var simulation: Simulation? { generation.withLock { $0.simulation } }
    /// The route-table watcher (`reachability.enabled`), started in `start`.
    let reachability: NetworkReachabilityManager?

    let startTime = Instant.now()

    private let nextConnectionID = Atomic<UInt64>(1)
    /// The loop the next replayed request runs on (`replay`), in turn.
    let nextReplayLoop = Atomic<Int>(0)
    let openConnections = Atomic<Int>(0)
    /// Every upstream socket Lookout connected, until it closes (`SessionStatistics`).
    let openUpstreamConnections = OpenConnectionCounter()
    private let shuttingDown = ShutdownFlag()

    /// `planner` builds the stage plan (`LookoutStages` gives the public initializer that passes
    /// its own): the core never names a stage.
    package init(configuration: SessionConfiguration, monitors: [EventMonitor],
                 adminEndpoints: [any AdminEndpoint] = [],
                 redirectHandler: RedirectHandler? = nil,
                 cachedResponseHandler: CachedResponseHandler? = nil,
                 retrier: RequestRetrier? = nil,
                 adapters: [any RequestAdapter] = [],
                 logger: Logger = Logger(label: "lookout"),
                 planner: @escaping StagePlanner) throws {
        self.configuration = configuration
        let monitor = CompositeEventMonitor(monitors: monitors, mailboxLimit: configuration.monitorQueueLimit)
        self.monitor = monitor
        self.logger = logger
        self.group = EventLoopGroup(count: configuration.eventLoopCount,
                                    spinMicroseconds: configuration.eventLoopSpinMicroseconds)
        let breakpoints = try Breakpoints(settings: configuration.breakpoints, loops: group.loops.count)
        self.breakpoints = breakpoints
        // The session's states the upstream side reads, through the atomics that hold them;
        // `self` is not complete yet, so they are captured, not the session.
        let shuttingDown = self.shuttingDown
        let reachability = configuration.reachabilityEnabled
            ? NetworkReachabilityManager(loop: group.loops[0], events: monitor) : nil
        self.reachability = reachability
        parts = SessionParts(
            monitor: monitor, counters: ExchangeCounters(), resolver: Resolver(cacheTTL: configuration.dnsCacheTTL),
            openUpstreamConnections: openUpstreamConnections,
            networkUnreachable: { reachability?.isNotReachable.load(ordering: .relaxed) ?? false },
            shuttingDown: { shuttingDown.isSet }, planner: planner, adapters: adapters,
            redirectHandler: redirectHandler, cachedResponseHandler: cachedResponseHandler, retrier: retrier,
            breakpoints: breakpoints, adminEndpoints: adminEndpoints, startTime: startTime,
            loopCount: group.loops.count, spinMicroseconds: group.spinMicroseconds)
        let first = try SessionGeneration(configuration: configuration, parts: parts)
        generation = Guarded(first)
        // The embedder's policies, or the first configuration's.
        self.redirectHandler = first.exchanges.redirectHandler
        self.retrier = first.exchanges.retrier
        self.contexts = group.loops.map { loop in
            LoopContext(loop: loop, configuration: configuration, clients: first.clients,
                        delegate: SessionDelegate(monitor: monitor, logger: logger))
        }
        self.registries = group.loops.map { _ in ClientRegistry() }
    }

    // MARK: - Ids and events

    func makeConnectionID() -> UInt64 { nextConnectionID.add(1, ordering: .relaxed).oldValue }

    /// Posts an event, building it only if some monitor wants its kind.
    @inline(__always) func emit<Kind: EventKind>(_ context: @autoclosure () -> EventContext, _ make: @autoclosure () -> Kind) {
        if monitor.wants(Kind.interest) { monitor.post(LookoutEvent(context(), make())) }
    }

    public var isShuttingDown: Bool { shuttingDown.isSet }

    // MARK: - Starting

    /// Binds every listener and starts accepting. Returns the bound addresses (real ports for port 0).
    /// The admin-only addresses (`admin.listen`) follow the proxy's in the result.
    @discardableResult
    public func start() throws -> [SocketAddress] {
        var bound: [SocketAddress] = []
        let addresses = configuration.listen.map { ($0, ListenerRole.proxy) }
            + configuration.adminListen.map { ($0, ListenerRole.admin) }
            + configuration.transparentListen.map { ($0, ListenerRole.transparent) }
            + configuration.socksListen.map { ($0, ListenerRole.socks5) }
        for ((host, port), role) in addresses {
            guard let address = SocketAddress(ip: host, port: port) else {
                throw SocketError("listen address \(host):\(port) is not an IP literal", code: EINVAL)
            }
            let listener = try Listener(address: address, transparent: role == .transparent, queue: acceptQueue) {
                [unowned self] fd, peer, local in
                accept(fd: fd, peer: peer, local: local, role: role, listener: address)
            }
            listeners.append(listener)
            bound.append(listener.address)
            if role == .socks5, socksListener == nil { socksListener = listener.address.description }
        }
        for (host, port, engine) in configuration.secureListen {
            guard let address = SocketAddress(ip: host, port: port) else {
                throw SocketError("listen address \(host):\(port) is not an IP literal", code: EINVAL)
            }
            let listener = try Listener(address: address, queue: acceptQueue) { [unowned self] fd, peer, local in
                accept(fd: fd, peer: peer, local: local, role: .proxy, listener: address, tls: engine)
            }
            listeners.append(listener)
            bound.append(listener.address)
        }
        ownAddresses = bound
        listeners.forEach { $0.start() }
        // Recorded before reachability starts: its first reading is a change record, and the log
        // opens with session.didStart.
        emit(EventContext(connectionID: 0), SessionDidStart(listeners: bound.map(\.description)))
        if let reachability {
            group.loops[0].execute { reachability.start() }
        }
        return bound
    }

    /// On the accept queue: admit the connection to a loop, or refuse it when at the limit. A
    /// transparent listener's connection learns its original destination here, from its socket.
    func accept(fd: Int32, peer: SocketAddress, local: SocketAddress?, role: ListenerRole, listener: SocketAddress,
                tls: TLSEngine? = nil) {
        let id = makeConnectionID()
        let limit = configuration.maxConnections
        let refusal: ProxyError?
        if shuttingDown.isSet {
            refusal = .sessionUnavailable(reason: .shuttingDown)
        } else if let denied = clients.access.refusal(forClient: peer) {
            refusal = denied
        } else if openConnections.load(ordering: .relaxed) >= limit {
            refusal = .sessionUnavailable(reason: .tooManyConnections(limit: limit))
        } else {
            refusal = nil
        }
        if let refusal {
            // A fresh socket's send buffer is empty, so this short answer goes out without blocking.
            // Only proxy clients get it in HTTP: the others did not speak HTTP to Lookout.
            if role == .proxy || role == .admin {
                let response = ErrorResponse.bytes(for: refusal, closeConnection: true)
                _ = response.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            Glibc.shutdown(fd, Int32(SHUT_WR))
            Glibc.close(fd)
            emit(EventContext(connectionID: id), ConnectionWasRejected(client: peer.description, error: refusal))
            return
        }
        let destination = role == .transparent
            ? OriginalDestination.read(fd: fd, listener: listener, ownListeners: ownAddresses) : nil
        openConnections.add(1, ordering: .relaxed)
        let loop = group.next()
        let context = contexts[loop.index]
        let registry = registries[loop.index]
        loop.execute { [self] in
            let connection = Connection(fd: fd, loop: loop, id: id, peerAddress: peer, localAddress: local)
            let client = ClientConnection(environment: context.clients, owner: self, context: context, connection: connection,
                                          role: role, listenerTLS: tls)
            registry.clients[id] = client
            emit(EventContext(connectionID: id),
                 ConnectionDidOpen(client: peer.description, listener: connection.localAddress?.description ?? ""))
            client.start(destination: destination)
        }
    }

    /// The gauges of the status page and `/metrics`, read now (any thread).
    public var statistics: SessionStatistics {
        let cacheStatistics = exchanges.cache?.store.statistics
        let spins = group.spinTotals
        return SessionStatistics(
            openClientConnections: openConnections.load(ordering: .relaxed),
            openUpstreamConnections: openUpstreamConnections.value,
            exchangesInFlight: exchanges.counters.exchangesInFlight.load(ordering: .relaxed),
            exchangesFinished: exchanges.counters.exchangesFinished.load(ordering: .relaxed),
            droppedEvents: monitor.droppedEventCount,
            reachability: reachability?.status,
            cacheObjects: cacheStatistics?.objects,
            cacheBytes: cacheStatistics?.bytes,
            startTimeSeconds: Double(startTime.unixMicroseconds) / 1_000_000,
            loopSpins: spins.spins, loopSpinNanoseconds: spins.nanoseconds)
    }

    /// The reachability status and interface, for the status page; nil when not watched.
    var reachabilitySnapshot: (status: String, interface: String?)? { reachability?.snapshot }

    // MARK: - Shutdown

    /// Stops accepting, lets in-flight exchanges finish within the grace period, closes the rest,
    /// then flushes the monitors and calls `completion` (on an arbitrary queue).
    public func shutdown(completion: @escaping @Sendable () -> Void) {
        guard shuttingDown.set() else { return }
        listeners.forEach { $0.stop() }
        stopNamespaceCaptures()
        let inFlight = exchanges.counters.exchangesInFlight.load(ordering: .relaxed)
        emit(EventContext(connectionID: 0), SessionWillInvalidate(inFlight: inFlight))
        for (context, registry) in zip(contexts, registries) {
            context.loop.execute {
                for client in Array(registry.clients.values) { client.beginShutdown() }
                context.pool.closeAll(graceful: true)
            }
        }
        let deadline = Instant.now().nanoseconds + UInt64(configuration.timeouts.shutdownGrace * 1e9)
        let hooks = self.hooks
        waitForConnections(until: deadline) {
            // Last: exchanges still finishing during the grace period may call their hooks.
            hooks.stop()
            completion()
        }
    }

    /// Closes everything at once (second signal).
    public func shutdownNow() {
        for (context, registry) in zip(contexts, registries) {
            context.loop.execute {
                for client in Array(registry.clients.values) { client.forceClose() }
                context.pool.closeAll(graceful: false)
            }
        }
    }

    private func waitForConnections(until deadline: UInt64, completion: @escaping @Sendable () -> Void) {
        if openConnections.load(ordering: .relaxed) == 0 || Instant.now().nanoseconds >= deadline {
            if openConnections.load(ordering: .relaxed) > 0 {
                logger.warning("shutdown grace period over; closing \(openConnections.load(ordering: .relaxed)) connections")
                shutdownNow()
            }
            // Give the loops one turn to emit the records of what was just closed.
            let group = DispatchGroup()
            for context in contexts {
                group.enter()
                context.loop.execute { group.leave() }
            }
            group.notify(queue: .global()) { [self] in
                emit(EventContext(connectionID: 0), SessionDidBecomeInvalid(droppedEvents: monitor.droppedEventCount))
                monitor.flush()
                completion()
            }
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) { [self] in
            waitForConnections(until: deadline, completion: completion)
        }
    }
}

extension Session: ClientConnectionOwner {
    /// Called on the connection's loop when it has closed.
    func clientConnectionDidClose(_ client: ClientConnection) {
        registries[client.connection.loop.index].clients[client.id] = nil
        openConnections.subtract(1, ordering: .relaxed)
    }
}
