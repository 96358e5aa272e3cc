import LookoutIO
import LookoutModel

/// What an opener reports to the task or tunnel it opens a connection for (its one boundary up).
package protocol UpstreamOpenerClient: AnyObject {
    /// Where the resolve and connect timings and addresses go.
    var metrics: TransactionMetrics { get set }
    /// Who the resolve and connect events are about.
    var eventContext: EventContext { get }
    /// `earlyBytes`: what came right behind a parent proxy's answer to the CONNECT (usually none).
    func openerDidConnect(_ connection: Connection, earlyBytes: [UInt8])
    func openerDidFail(_ error: ProxyError)
}

/// Resolves and connects to an origin for a task or a tunnel, reporting each step. With a parent
/// proxy it connects to the parent instead, and for https and tunnels (`tunnel`) asks it for a
/// CONNECT to the origin first. The steps go to the loop's `UpstreamEvents`, so both kinds of
/// exchange emit the same events.
package struct UpstreamOpener {
    package let environment: UpstreamEnvironment
    package let loop: EventLoop
    package let events: any UpstreamEvents

    package init(environment: UpstreamEnvironment, loop: EventLoop, events: any UpstreamEvents) {
        self.environment = environment
        self.loop = loop
        self.events = events
    }

    /// Callbacks for each step; they run on `loop`, which is why they may cross the resolver's queue.
    package struct Steps: @unchecked Sendable {
        package var didResolve: (Resolution, Instant, Instant) -> Void
        package var willConnect: (Instant) -> Void
        package var didConnect: (Connection, Instant, [UInt8]) -> Void
        package var didFail: (ProxyError) -> Void
    }

    /// Opens a connection for `client`: records the DNS and connect timings in its metrics,
    /// reports `task.didResolve` and `task.didConnect`, then hands it the connection (or the error).
    /// `clientAuthorization`: the client's own `Proxy-Authorization` for a parent (see
    /// `ParentConnectHandshake`).
    package func open(_ origin: Origin, tunnel: Bool, clientAuthorization: String? = nil,
              for client: some UpstreamOpenerClient) -> OpenHandle {
        let events = self.events
        return open(origin, tunnel: tunnel, clientAuthorization: clientAuthorization, steps: .init(
            didResolve: { [unowned client] resolution, start, end in
                client.metrics.domainLookupStart = start
                client.metrics.domainLookupEnd = end
                events.upstream(client.eventContext, didResolve: resolution, host: origin.host,
                                  milliseconds: end.milliseconds(since: start))
            },
            willConnect: { [unowned client] start in client.metrics.connectStart = start },
            didConnect: { [unowned client] connection, end, earlyBytes in
                client.metrics.connectEnd = end
                client.metrics.remoteAddress = connection.peerAddress?.description
                client.metrics.localAddress = connection.localAddress?.description
                events.upstream(client.eventContext, didConnect: connection,
                                  milliseconds: end.milliseconds(since: client.metrics.connectStart ?? end))
                client.openerDidConnect(connection, earlyBytes: earlyBytes)
            },
            didFail: { [unowned client] error in client.openerDidFail(error) }))
    }

    /// Returns a handle to cancel a connect in progress.
    private func open(_ origin: Origin, tunnel: Bool, clientAuthorization: String?, steps: Steps) -> OpenHandle {
        let handle = OpenHandle()
        let environment = self.environment
        let lookupStart = Instant.now()
        let loop = self.loop
        let access = environment.access
        // Every hop is checked here too: a followed redirect does not pass through routing.
        if let refusal = access.refusal(forHost: origin.ruleKey) {
            loop.execute { if !handle.isCancelled { steps.didFail(refusal) } }
            return handle
        }
        let parent = origin.parent
        let dialHost = parent?.host ?? origin.dialAddress ?? origin.host
        let dialPort = parent?.port ?? origin.port
        let failFast = environment.failFastWhenUnreachable
        environment.resolver.resolve(host: dialHost, port: dialPort, on: loop) { result in
            guard !handle.isCancelled else { return }
            // While there is no route out, only loopback destinations are tried (fail fast).
            let unreachable = failFast && environment.networkIsUnreachable
            if unreachable, case .failure = result {
                steps.didFail(.sessionUnavailable(reason: .networkUnreachable(host: dialHost)))
                return
            }
            switch result {
            case .failure(let error):
                steps.didFail(parent == nil ? .upstreamFailed(reason: .dnsFailed(host: origin.host, message: error.message))
                                            : Self.parentFailed(parent, "cannot resolve \(dialHost): \(error.message)"))
            case .success(let resolution):
                let lookupEnd = Instant.now()
                steps.didResolve(resolution, lookupStart, lookupEnd)
                // Checked on the addresses about to be connected to, not on the name: DNS
                // rebinding and other spellings of an address end here.
                var addresses = access.denyNetworks.isEmpty ? resolution.addresses
                    : resolution.addresses.filter { access.deniedNetwork(for: $0) == nil }
                if unreachable {
                    addresses = addresses.filter { address in loopbackNetworks.contains { $0.contains(address) } }
                    if addresses.isEmpty {
                        steps.didFail(.sessionUnavailable(reason: .networkUnreachable(host: dialHost)))
                        return
                    }
                }
                if addresses.isEmpty, let first = resolution.addresses.first,
                   let network = access.deniedNetwork(for: first) {
                    steps.didFail(.accessDenied(reason: .destinationNetworkDenied(
                        host: origin.host, address: first.ipText, network: network.description)))
                    return
                }
                steps.willConnect(lookupEnd)
                connect(to: addresses, origin: origin, tunnel: tunnel, clientAuthorization: clientAuthorization,
                        handle: handle, steps: steps)
            }
        }
        return handle
    }
    /// Connects to the first address that answers; through a parent, a CONNECT to the origin for
    /// https and tunnels (RFC 9110 §9.3.6) before the connection is handed over.
    private func connect(to addresses: [SocketAddress], origin: Origin, tunnel: Bool, clientAuthorization: String?,
                         handle: OpenHandle, steps: Steps) {
        let environment = self.environment
        let timeout = environment.timeouts.upstreamConnect
        let parent = origin.parent
        handle.connector = Connector.connect(to: addresses, timeout: timeout, on: loop,
                                             connectionID: environment.makeConnectionID()) { result in
            handle.connector = nil
            switch result {
            case .success(let connection):
                connection.countOpen(in: environment.openConnections)
                // A SOCKS5 parent carries plain connections too; an HTTP one only tunnels.
                guard let parent, tunnel || !parent.forwardsPlainRequests else {
                    steps.didConnect(connection, Instant.now(), [])
                    return
                }
                guard parent.kind == .http else {
                    self.socksConnect(connection, origin: origin, parent: parent, handle: handle, steps: steps)
                    return
                }
                handle.parentHandshake = ParentConnectHandshake(
                    connection: connection, authority: origin.authority, parent: parent,
                    clientAuthorization: clientAuthorization, timeout: timeout
                ) { outcome in
                    handle.parentHandshake = nil
                    guard !handle.isCancelled else { return }
                    switch outcome {
                    case .success(let earlyBytes): steps.didConnect(connection, Instant.now(), earlyBytes)
                    case .failure(let error): steps.didFail(error)
                    }
                }
            case .failure(.timedOut):
                steps.didFail(parent == nil ? .upstreamFailed(reason: .connectTimedOut(after: timeout))
                                            : Self.parentFailed(parent, "connect timed out after \(timeout) s"))
            case .failure(let error):
                steps.didFail(parent == nil ? .upstreamFailed(reason: .connectFailed(error.description))
                                            : Self.parentFailed(parent, "cannot connect: \(error.description)"))
            }
        }
    }

    /// Through a SOCKS5 parent: `socks5` resolves the origin's name here (and checks
    /// `access.deny_networks` on the address), `socks5h` sends the name.
    private func socksConnect(_ connection: Connection, origin: Origin, parent: ParentProxy, handle: OpenHandle, steps: Steps) {
        let environment = self.environment
        let timeout = environment.timeouts.upstreamConnect
        let host = origin.dialAddress ?? origin.host
        guard parent.kind == .socks5, SocketAddress(ip: host, port: origin.port) == nil else {
            Self.socksHandshake(connection, target: host, port: origin.port, parent: parent, timeout: timeout,
                                handle: handle, steps: steps)
            return
        }
        environment.resolver.resolve(host: host, port: origin.port, on: loop) { result in
            switch result {
            case .failure(let error):
                connection.close()
                steps.didFail(.upstreamFailed(reason: .dnsFailed(host: origin.host, message: error.message)))
            case .success(let resolution):
                let allowed = resolution.addresses.filter { environment.access.deniedNetwork(for: $0) == nil }
                guard let first = allowed.first else {
                    connection.close()
                    let address = resolution.addresses.first
                    let network = address.flatMap { environment.access.deniedNetwork(for: $0) }
                    steps.didFail(.accessDenied(reason: .destinationNetworkDenied(
                        host: origin.host, address: address?.ipText ?? "", network: network?.description ?? "")))
                    return
                }
                Self.socksHandshake(connection, target: first.ipText, port: origin.port, parent: parent, timeout: timeout,
                                    handle: handle, steps: steps)
            }
        }
    }

    private static func socksHandshake(_ connection: Connection, target: String, port: Int, parent: ParentProxy,
                                       timeout: Double, handle: OpenHandle, steps: Steps) {
        guard !handle.isCancelled else {
            connection.close()
            return
        }
        handle.socksHandshake = SocksConnectHandshake(connection: connection, host: target, port: port,
                                                      parent: parent, timeout: timeout) { outcome in
            handle.socksHandshake = nil
            guard !handle.isCancelled else { return }
            switch outcome {
            case .success(let earlyBytes): steps.didConnect(connection, Instant.now(), earlyBytes)
            case .failure(let error): steps.didFail(error)
            }
        }
    }

    /// A parent proxy's failure, with what went wrong.
    private static func parentFailed(_ parent: ParentProxy?, _ detail: String) -> ProxyError {
        .upstreamFailed(reason: .parentProxyFailed(proxy: parent?.description ?? "", detail: detail))
    }
}

/// Where a fail-fast proxy still goes while there is no route out.
private let loopbackNetworks = IPNetwork.named("loopback")!

/// Cancels an `UpstreamOpener.open` in progress.
package final class OpenHandle: @unchecked Sendable {  // used only on the opening loop's queue
    fileprivate(set) var isCancelled = false
    fileprivate var connector: Connector?
    fileprivate var parentHandshake: ParentConnectHandshake?
    fileprivate var socksHandshake: SocksConnectHandshake?

    package func cancel() {
        isCancelled = true
        connector?.cancel()
        connector = nil
        parentHandshake?.cancel()
        parentHandshake = nil
        socksHandshake?.cancel()
        socksHandshake = nil
    }
}
