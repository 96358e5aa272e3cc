/// `timeouts`, in seconds, every one greater than 0: what the config file says and what the
/// session runs with.
public struct Timeouts: Sendable, Equatable {
    /// `client_header`: head not complete in time -> 408.
    public var clientHeader: Double
    /// `client_idle`: an idle keep-alive client connection is closed.
    public var clientIdle: Double
    /// `upstream_connect`: -> 504 upstream_connect_timeout.
    public var upstreamConnect: Double
    /// `upstream_first_byte`: no response head in time -> 504.
    public var upstreamFirstByte: Double
    /// `upstream_idle`: no bytes from upstream mid-response -> 504 or abort.
    public var upstreamIdle: Double
    /// `shutdown_grace`: how long in-flight exchanges may finish after SIGTERM/SIGINT.
    public var shutdownGrace: Double
    /// `tls_handshake`: a TLS handshake (client or upstream) not finished in time fails.
    public var tlsHandshake: Double
    /// `tunnel_idle`: a CONNECT tunnel with no byte either way for this long is closed.
    public var tunnelIdle: Double

    public init(
        clientHeader: Double = 30,
        clientIdle: Double = 60,
        upstreamConnect: Double = 10,
        upstreamFirstByte: Double = 60,
        upstreamIdle: Double = 60,
        shutdownGrace: Double = 10,
        tlsHandshake: Double = 10,
        tunnelIdle: Double = 3600
    ) {
        self.clientHeader = clientHeader
        self.clientIdle = clientIdle
        self.upstreamConnect = upstreamConnect
        self.upstreamFirstByte = upstreamFirstByte
        self.upstreamIdle = upstreamIdle
        self.shutdownGrace = shutdownGrace
        self.tlsHandshake = tlsHandshake
        self.tunnelIdle = tunnelIdle
    }
}
