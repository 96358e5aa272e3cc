import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import Synchronization

/// Everything the upstream side needs from the session that owns it, handed over as values once:
/// limits and timeouts, the TLS engines and the trust manager, the resolver, the destination
/// rules, and the few session states it must see (shutdown, reachability). The upstream side never
/// holds the session itself.
package final class UpstreamEnvironment: Sendable {
    package let timeouts: Timeouts
    package let parserLimits: HTTPParserLimits
    package let http2: HTTP2Settings
    /// How long an idle upstream connection is kept (an HTTP/2 one is PINGed at a third of it).
    package let poolIdleTimeout: Double
    /// Offers `h2` then `http/1.1` to https origins with `http2.upstream`, else `http/1.1`.
    package let tls: TLSEngine
    /// Offers only `http/1.1`: for requests that ask for a protocol switch, which HTTP/2 does not
    /// have (RFC 9113 §8.6).
    package let tlsHTTP1: TLSEngine
    /// Judges every upstream certificate chain by the host's rule.
    package let trustManager: ServerTrustManager
    package let resolver: Resolver
    /// `access`: destinations and networks refused on every hop.
    package let access: AccessPolicy
    /// `reachability.fail_fast`: while there is no route out, only loopback is tried.
    package let failFastWhenUnreachable: Bool
    /// Every upstream socket connected, until it closes (the status page's count).
    package let openConnections: OpenConnectionCounter
    private let networkUnreachable: @Sendable () -> Bool
    private let shuttingDown: @Sendable () -> Bool
    private let nextConnectionID = Atomic<UInt64>(1)

    package init(timeouts: Timeouts, parserLimits: HTTPParserLimits, http2: HTTP2Settings, poolIdleTimeout: Double,
                 tls: TLSEngine, tlsHTTP1: TLSEngine, trustManager: ServerTrustManager, resolver: Resolver,
                 access: AccessPolicy, failFastWhenUnreachable: Bool, openConnections: OpenConnectionCounter,
                 networkUnreachable: @escaping @Sendable () -> Bool, shuttingDown: @escaping @Sendable () -> Bool) {
        self.timeouts = timeouts
        self.parserLimits = parserLimits
        self.http2 = http2
        self.poolIdleTimeout = poolIdleTimeout
        self.tls = tls
        self.tlsHTTP1 = tlsHTTP1
        self.trustManager = trustManager
        self.resolver = resolver
        self.access = access
        self.failFastWhenUnreachable = failFastWhenUnreachable
        self.openConnections = openConnections
        self.networkUnreachable = networkUnreachable
        self.shuttingDown = shuttingDown
    }

    /// True while reachability is watched and there is no route to the outside.
    package var networkIsUnreachable: Bool { networkUnreachable() }
    /// True once the session began to shut down: connections are no longer pooled.
    package var isShuttingDown: Bool { shuttingDown() }
    /// The next upstream connection's id (the log's `upstream_conn`).
    package func makeConnectionID() -> UInt64 { nextConnectionID.add(1, ordering: .relaxed).oldValue }
}
