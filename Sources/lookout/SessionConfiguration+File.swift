import Logging
import Lookout
import LookoutConfig
import LookoutHTTP
import LookoutTLS

extension SessionConfiguration {
    /// Maps the validated config file onto the session's runtime configuration. Loads the trust
    /// stores and pinned certificates, and (when interception is on) loads or creates the CA.
    init(_ file: LookoutConfiguration, logger: Logger) throws {
        self.init()
        listen = file.listen.map { ($0.host, $0.port) }
        eventLoopCount = file.eventLoops
        maxConnections = file.maxConnections
        parserLimits = HTTPParserLimits(maxRequestLineBytes: file.limits.maxRequestLineBytes,
                                        maxHeaderBytes: file.limits.maxHeaderBytes,
                                        maxHeaderCount: file.limits.maxHeaderCount)
        maxRequestBodyBytes = UInt64(file.limits.maxRequestBodyBytes)
        timeouts.clientHeader = file.timeouts.clientHeader
        timeouts.clientIdle = file.timeouts.clientIdle
        timeouts.upstreamConnect = file.timeouts.upstreamConnect
        timeouts.upstreamFirstByte = file.timeouts.upstreamFirstByte
        timeouts.upstreamIdle = file.timeouts.upstreamIdle
        timeouts.shutdownGrace = file.timeouts.shutdownGrace
        allowedConnectPorts = Set(file.connect.allowedPorts)
        maxIdleConnectionsPerOrigin = file.pool.maxIdlePerOrigin
        poolIdleTimeout = file.pool.idleTimeout
        dnsCacheTTL = file.dns.cacheTTL
        addVia = file.headers.via
        proxyCredentials = file.auth.users
        monitorQueueLimit = file.log.queueLimit
    }
}
