import LookoutHTTP
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// What client connections (HTTP/1.x and their HTTP/2 sides) need of the session, handed over as
/// values once: limits and timeouts, what is intercepted and how, who may ask for what, and what
/// their exchanges and admin pages are given in turn. Nothing here is the session.
final class ClientEnvironment: Sendable {
    let exchanges: ExchangeEnvironment
    let admin: AdminContext
    let parserLimits: HTTPParserLimits
    let http2: HTTP2Settings
    /// What is intercepted, and what a blind tunnel to a pinned host gets.
    let tls: TLSSettings
    /// Terminates intercepted clients' TLS; nil without interception.
    let interceptionTLS: TLSEngine?
    /// `interception.learn_passthrough`.
    let passthrough: PassthroughStore?
    let trustManager: ServerTrustManager
    let access: AccessPolicy
    let allowedConnectPorts: Set<Int>

    init(configuration: SessionConfiguration, exchanges: ExchangeEnvironment, admin: AdminContext,
         interceptionTLS: TLSEngine?, trustManager: ServerTrustManager, passthrough: PassthroughStore?) {
        self.exchanges = exchanges
        self.admin = admin
        self.parserLimits = configuration.parserLimits
        self.http2 = configuration.http2
        self.tls = configuration.tls
        self.interceptionTLS = interceptionTLS
        self.passthrough = passthrough
        self.trustManager = trustManager
        self.access = configuration.access
        self.allowedConnectPorts = configuration.allowedConnectPorts
    }

    var timeouts: Timeouts { exchanges.upstream.timeouts }

    /// Why `access` refuses a request (nil: allowed).
    func accessRefusal(method: String, host: HostRuleKey) -> ProxyError? {
        access.refusal(method: method, host: host)
    }
}

/// What a client connection tells the one that accepted it (the session), and what its admin pages
/// read of it: the one boundary from a connection back up.
protocol ClientConnectionOwner: AdminStatusSource {
    /// The connection has closed: it is forgotten and no longer counted.
    func clientConnectionDidClose(_ client: ClientConnection)
}

/// The open client connections of one event loop, by id (shutdown, in-flight listings).
final class ClientRegistry: @unchecked Sendable {  // confined to its loop's queue
    var clients: [UInt64: ClientConnection] = [:]
}
