import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What the session does with TLS: which CONNECTs it intercepts, how it judges origins'
/// certificates, and the protocol floor for both sides.
public struct TLSSettings: Sendable {
    /// What to do with a CONNECT to a pinned host that is not intercepted.
    public enum PinningWithoutInterception: String, Sendable {
        /// Answer 403 `pinning_requires_interception`: the pin could not be enforced.
        case refuse
        /// Open the blind tunnel anyway (the log records that the pin went unchecked).
        case allow
    }

    /// Per-host trust rules; nil means the default evaluator over the system roots for every host.
    public var trustManager: ServerTrustManager?
    /// CONNECT targets matching one of these are intercepted; empty means blind tunnels only.
    public var interceptedHosts: [HostPattern] = []
    /// Signs the leaf certificates presented to intercepted clients; required when
    /// `interceptedHosts` is not empty.
    public var certificateAuthority: CertificateAuthority?
    public var pinningWithoutInterception = PinningWithoutInterception.refuse
    /// The lowest TLS version accepted from clients and origins.
    public var minimumVersion = TLSProtocolVersion.tls12

    public init() {}

    /// Whether a CONNECT to `host` is intercepted.
    public func intercepts(_ host: String) -> Bool {
        interceptedHosts.contains { $0.matches(host) }
    }
}
