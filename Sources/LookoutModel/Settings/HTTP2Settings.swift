import LookoutTLS

/// `http2`: HTTP/2 toward intercepted clients and toward origins, as the config file says it and
/// the session runs it.
public struct HTTP2Settings: Sendable, Equatable {
    /// `client`: offer `h2` (then `http/1.1`) in ALPN to intercepted clients.
    public var client = true
    /// `upstream`: offer `h2` to https origins, falling back to HTTP/1.1 when they pick it.
    public var upstream = true
    /// `upstream_h2c_hosts`: host patterns reached over cleartext h2 with prior knowledge.
    public var upstreamH2CHosts: [HostPattern] = []
    /// `max_concurrent_streams`: per client connection (SETTINGS_MAX_CONCURRENT_STREAMS).
    public var maxConcurrentStreams = 128
    /// `max_header_list_bytes`: SETTINGS_MAX_HEADER_LIST_SIZE; larger requests get 431.
    public var maxHeaderListBytes = 65536
    public init() {}
}
