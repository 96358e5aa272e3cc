extension ProxyError.RequestRejectionReason {
    /// The stable machine-readable code (the `error.code` of records, `X-Lookout-Error`).
    public var code: String {
        switch self {
        case .malformedRequest: return "malformed_request"
        case .conflictingFraming: return "conflicting_framing"
        case .invalidContentLength: return "invalid_content_length"
        case .invalidChunkedEncoding: return "invalid_chunked_encoding"
        case .notAProxyRequest: return "not_a_proxy_request"
        case .adminListenerDoesNotProxy: return "admin_listener_does_not_proxy"
        case .adminTokenRequired: return "admin_token_required"
        case .missingHost: return "missing_host"
        case .unsupportedScheme: return "unsupported_scheme"
        case .connectPortNotAllowed: return "connect_port_not_allowed"
        case .proxyAuthenticationRequired: return "proxy_authentication_required"
        case .requestLineTooLong: return "request_line_too_long"
        case .requestHeaderTooLarge, .headerListTooLarge: return "request_header_too_large"
        case .requestBodyTooLarge: return "request_body_too_large"
        case .unsupportedTransferCoding: return "unsupported_transfer_coding"
        case .pinningRequiresInterception: return "pinning_requires_interception"
        case .misdirectedRequest: return "misdirected_request"
        case .connectOverHTTP2: return "connect_over_http2"
        case .originalDestinationUnknown: return "original_destination_unknown"
        case .redirectLoop: return "capture_loop"
        case .socksNoAcceptableMethod: return "socks_no_acceptable_method"
        case .socksAuthenticationFailed: return "socks_authentication_failed"
        case .socksMalformed: return "socks_malformed_request"
        case .socksCommandNotSupported: return "socks_command_not_supported"
        }
    }
}

extension ProxyError.UpstreamFailureReason {
    /// The stable machine-readable code (the `error.code` of records, `X-Lookout-Error`).
    public var code: String {
        switch self {
        case .dnsFailed: return "upstream_dns_failed"
        case .connectFailed: return "upstream_connect_failed"
        case .connectTimedOut: return "upstream_connect_timeout"
        case .firstByteTimedOut: return "upstream_first_byte_timeout"
        case .idleTimedOut: return "upstream_idle_timeout"
        case .malformedResponse: return "upstream_malformed_response"
        case .closed: return "upstream_closed"
        case .tlsHandshakeFailed: return "upstream_tls_handshake_failed"
        case .tlsHandshakeTimedOut: return "upstream_tls_handshake_timed_out"
        case .parentProxyFailed: return "parent_proxy_failed"
        case .parentProxyAuthenticationRequired: return "parent_proxy_authentication_required"
        case .streamReset: return "upstream_stream_reset"
        case .streamRefused: return "upstream_stream_refused"
        }
    }
}

extension ProxyError.ClientFailureReason {
    /// The stable machine-readable code (the `error.code` of records, `X-Lookout-Error`).
    public var code: String {
        switch self {
        case .headerTimedOut: return "client_header_timeout"
        case .tunnelIdleTimedOut: return "tunnel_idle_timeout"
        case .closed: return "client_closed"
        case .tlsHandshakeFailed: return "client_tls_handshake_failed"
        case .tlsHandshakeTimedOut: return "client_tls_handshake_timed_out"
        }
    }
}

extension ProxyError.SessionUnavailableReason {
    /// The stable machine-readable code (the `error.code` of records, `X-Lookout-Error`).
    public var code: String {
        switch self {
        case .tooManyConnections: return "too_many_connections"
        case .shuttingDown: return "shutting_down"
        case .networkUnreachable: return "network_unreachable"
        case .notCached: return "only_if_cached"
        case .cacheReadFailed: return "cache_read_failed"
        }
    }
}

extension ProxyError.RedirectFailureReason {
    /// The stable machine-readable code (the `error.code` of records, `X-Lookout-Error`).
    public var code: String {
        switch self {
        case .limitExceeded: return "redirect_limit_exceeded"
        case .loop: return "redirect_loop"
        case .downgradeRefused: return "redirect_downgrade_refused"
        }
    }
}

extension ProxyError.AccessDenialReason {
    /// The stable machine-readable code (the `error.code` of records, `X-Lookout-Error`).
    public var code: String {
        switch self {
        case .clientNotAllowed: return "client_not_allowed"
        case .destinationDenied: return "destination_denied"
        case .destinationNetworkDenied: return "destination_network_denied"
        case .methodNotAllowed: return "method_not_allowed"
        case .policyDenied: return "policy_denied"
        case .rateLimited: return "rate_limited"
        case .concurrencyLimited: return "concurrency_limited"
        }
    }
}

extension ProxyError.MapFailureReason {
    /// The stable machine-readable code (the `error.code` of records, `X-Lookout-Error`).
    public var code: String {
        switch self {
        case .downgradeRefused: return "map_downgrade_refused"
        case .localFileUnreadable: return "map_local_unreadable"
        }
    }
}
