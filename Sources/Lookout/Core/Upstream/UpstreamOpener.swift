import LookoutIO

/// What an opener reports to the task or tunnel it opens a connection for (its one boundary up).
protocol UpstreamOpenerClient: AnyObject {
    /// Where the resolve and connect timings and addresses go.
    var metrics: TransactionMetrics { get set }
    /// Who the resolve and connect events are about.
    var eventContext: EventContext { get }
    func openerDidConnect(_ connection: Connection)
    func openerDidFail(_ error: ProxyError)
}

/// Resolves and connects to an origin for a task or a tunnel, reporting each step.
/// The steps go through `SessionDelegate` so both kinds of exchange emit the same events.
struct UpstreamOpener {
    let session: Session
    let loop: EventLoop

    /// Callbacks for each step; they run on `loop`, which is why they may cross the resolver's queue.
    struct Steps: @unchecked Sendable {
        var didResolve: (Resolution, Instant, Instant) -> Void
        var willConnect: (Instant) -> Void
        var didConnect: (Connection, Instant) -> Void
        var didFail: (ProxyError) -> Void
    }

    /// Opens a connection for `client`: records the DNS and connect timings in its metrics,
    /// reports `task.didResolve` and `task.didConnect`, then hands it the connection (or the error).
    func open(_ origin: Origin, for client: some UpstreamOpenerClient) -> OpenHandle {
        let delegate = session.delegate
        return open(origin, steps: .init(
            didResolve: { [unowned client] resolution, start, end in
                client.metrics.domainLookupStart = start
                client.metrics.domainLookupEnd = end
                delegate.upstream(client.eventContext, didResolve: resolution, host: origin.host,
                                  milliseconds: end.milliseconds(since: start))
            },
            willConnect: { [unowned client] start in client.metrics.connectStart = start },
            didConnect: { [unowned client] connection, end in
                client.metrics.connectEnd = end
                client.metrics.remoteAddress = connection.peerAddress?.description
                client.metrics.localAddress = connection.localAddress?.description
                delegate.upstream(client.eventContext, didConnect: connection,
                                  milliseconds: end.milliseconds(since: client.metrics.connectStart ?? end))
                client.openerDidConnect(connection)
            },
            didFail: { [unowned client] error in client.openerDidFail(error) }))
    }

    /// Returns a handle to cancel a connect in progress.
    private func open(_ origin: Origin, steps: Steps) -> OpenHandle {
        let handle = OpenHandle()
        let timeout = session.configuration.timeouts.upstreamConnect
        let lookupStart = Instant.now()
        let session = self.session
        let loop = self.loop
        let access = session.configuration.access
        // Every hop is checked here too: a followed redirect does not pass through routing.
        if let refusal = access.refusal(forHost: origin.host) {
            loop.execute { if !handle.isCancelled { steps.didFail(refusal) } }
            return handle
        }
        session.resolver.resolve(host: origin.host, port: origin.port, on: loop) { result in
            guard !handle.isCancelled else { return }
            switch result {
            case .failure(let error):
                steps.didFail(.upstreamFailed(reason: .dnsFailed(host: origin.host, message: error.message)))
            case .success(let resolution):
                let lookupEnd = Instant.now()
                steps.didResolve(resolution, lookupStart, lookupEnd)
                // Checked on the addresses about to be connected to, not on the name: DNS
                // rebinding and other spellings of an address end here.
                let addresses = access.denyNetworks.isEmpty ? resolution.addresses
                    : resolution.addresses.filter { access.deniedNetwork(for: $0) == nil }
                if addresses.isEmpty, let first = resolution.addresses.first,
                   let network = access.deniedNetwork(for: first) {
                    steps.didFail(.accessDenied(reason: .destinationNetworkDenied(
                        host: origin.host, address: first.ipText, network: network.description)))
                    return
                }
                steps.willConnect(lookupEnd)
                handle.connector = Connector.connect(to: addresses, timeout: timeout, on: loop,
                                                     connectionID: session.makeUpstreamConnectionID()) { result in
                    handle.connector = nil
                    switch result {
                    case .success(let connection):
                        steps.didConnect(connection, Instant.now())
                    case .failure(.timedOut):
                        steps.didFail(.upstreamFailed(reason: .connectTimedOut(after: timeout)))
                    case .failure(let error):
                        steps.didFail(.upstreamFailed(reason: .connectFailed(error.description)))
                    }
                }
            }
        }
        return handle
    }
}

/// Cancels an `UpstreamOpener.open` in progress.
final class OpenHandle: @unchecked Sendable {  // used only on the opening loop's queue
    fileprivate(set) var isCancelled = false
    fileprivate var connector: Connector?

    func cancel() {
        isCancelled = true
        connector?.cancel()
        connector = nil
    }
}
