import LookoutHTTP
import LookoutTLS

/// Every way an exchange can fail. Each reason maps to one HTTP status for the client and one
/// stable snake_case `code` used in the error response and the log.
public enum ProxyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The client's request was refused before anything went upstream.
    case requestRejected(reason: RequestRejectionReason)
    /// The upstream could not be reached or misbehaved.
    case upstreamFailed(reason: UpstreamFailureReason)
    /// The client went away or was too slow.
    case clientFailed(reason: ClientFailureReason)
    /// The proxy itself cannot take the work (limits, shutdown).
    case sessionUnavailable(reason: SessionUnavailableReason)
    /// The upstream's certificate chain failed the host's trust rule (pins, roots, names, dates).
    case serverTrustEvaluationFailed(reason: TrustEvaluationError)
    /// A redirect the host's redirect rule refuses to pass or follow.
    case redirectFailed(reason: RedirectFailureReason)
    /// The `access` section refuses the client, the destination or the method.
    case accessDenied(reason: AccessDenialReason)
    /// An operator cancelled the exchange from the admin endpoint (`DELETE /exchanges/ID`);
    /// `operatorAddress` is where that request came from.
    case cancelledByOperator(operatorAddress: String)
    /// A fault a shaping rule injected on purpose (`shaping.rules[].faults`), never an origin's failure.
    case injectedFault(reason: InjectedFaultReason)
    /// A `map` rule matched but could not be applied.
    case mapFailed(reason: MapFailureReason)
    /// A stage held the exchange past the deadline it set (`stage` is what it was doing).
    case stageHoldTimedOut(stage: String, after: Double)

    /// What a shaping rule injected; `rule` names its host patterns.
    public enum InjectedFaultReason: Sendable, Equatable {
        /// `faults.status`: this status, without asking the origin.
        case status(code: Int, rule: String)
        /// `faults.reset_after_bytes`: the client was reset after that many response body bytes.
        case resetAfterBytes(UInt64, rule: String)
    }

    /// Why a map rule was not applied.
    public enum MapFailureReason: Sendable, Equatable {
        /// An https request mapped to an http target without the rule's `allow_downgrade`.
        case downgradeRefused(from: String, to: String)
        /// A map-local file that could be read when the config loaded cannot be read now.
        case localFileUnreadable(file: String, detail: String)
    }

    /// Why `access` refused.
    public enum AccessDenialReason: Sendable, Equatable {
        /// The client's address is in none of `access.clients`.
        case clientNotAllowed(client: String)
        /// The destination host is outside `access.allow_hosts` (`pattern` nil) or in `access.deny_hosts`.
        case destinationDenied(host: String, pattern: String?)
        /// An address the host resolved to (or is) lies in `access.deny_networks`.
        case destinationNetworkDenied(host: String, address: String, network: String)
        /// The method is not in `access.methods` (`allowed`, for the response's `Allow`).
        case methodNotAllowed(method: String, allowed: [String])
    }

    /// Why a redirect was refused.
    public enum RedirectFailureReason: Sendable, Equatable {
        /// Following it would be hop number `maxHops + 1`.
        case limitExceeded(maxHops: Int)
        /// The chain came back to a URL it had already requested.
        case loop(url: String)
        /// An https URL redirected to an http one (`allow_downgrade: false`).
        case downgradeRefused(location: String)
    }

    /// Why a request was refused.
    public enum RequestRejectionReason: Sendable, Equatable {
        case malformedRequest(String)
        case conflictingFraming
        case invalidContentLength
        case invalidChunkedEncoding
        case notAProxyRequest(path: String)
        /// A proxy request (absolute-form or CONNECT) sent to an `admin.listen` address.
        case adminListenerDoesNotProxy
        /// An admin page asked for without `admin.token` (or with a wrong one).
        case adminTokenRequired
        case missingHost(String)
        case unsupportedScheme(String)
        case connectPortNotAllowed(port: Int)
        case proxyAuthenticationRequired
        case requestLineTooLong
        case requestHeaderTooLarge
        /// An HTTP/2 request's header section (RFC 9113 §6.5.2 count) over `http2.max_header_list_bytes`.
        case headerListTooLarge(limit: Int)
        case requestBodyTooLarge(limit: UInt64)
        case unsupportedTransferCoding
        /// A CONNECT to a host whose trust rule pins, which a blind tunnel cannot check.
        case pinningRequiresInterception(host: String, rule: String)
        /// An HTTP/2 request for an authority other than the intercepted CONNECT's (a client
        /// coalescing connections, RFC 9113 §9.1.1): it should open a connection of its own.
        case misdirectedRequest(authority: String, origin: String)
        /// A method not served on an HTTP/2 stream: CONNECT (RFC 9113 §8.5) and extended CONNECT.
        case connectOverHTTP2
    }

    /// Why the upstream side failed.
    public enum UpstreamFailureReason: Sendable, Equatable {
        case dnsFailed(host: String, message: String)
        case connectFailed(String)
        case connectTimedOut(after: Double)
        case firstByteTimedOut(after: Double)
        case idleTimedOut(after: Double)
        case malformedResponse(String)
        case closed(String)
        case tlsHandshakeFailed(String)
        case tlsHandshakeTimedOut(after: Double)
        /// The parent proxy (`upstream_proxies`) could not be reached or refused the CONNECT.
        case parentProxyFailed(proxy: String, detail: String)
        /// The parent refused credentials the client itself sent for it: its 407 goes back, with
        /// its `Proxy-Authenticate` challenges.
        case parentProxyAuthenticationRequired(proxy: String, challenges: [String])
        /// The origin reset the HTTP/2 stream (RST_STREAM, RFC 9113 §6.4) with `code`, its §7 name.
        case streamReset(stream: Int32, code: String)
        /// The origin did not process the request (REFUSED_STREAM, or a stream above a GOAWAY's
        /// last stream id): RFC 9113 §8.7 lets it be sent again, whatever its method.
        case streamRefused(String)
    }

    /// Why the client side failed.
    public enum ClientFailureReason: Sendable, Equatable {
        case headerTimedOut(after: Double)
        case closed(String)
        /// An intercepted client's TLS handshake failed (e.g. it does not trust Lookout's CA).
        case tlsHandshakeFailed(String)
        case tlsHandshakeTimedOut(after: Double)
        /// Nothing crossed a CONNECT tunnel in either direction for this long.
        case tunnelIdleTimedOut(after: Double)
    }

    /// Why the proxy refused work it was otherwise able to do.
    public enum SessionUnavailableReason: Sendable, Equatable {
        case tooManyConnections(limit: Int)
        case shuttingDown
        /// No route to the outside (`reachability.fail_fast`).
        case networkUnreachable(host: String)
        /// `Cache-Control: only-if-cached` and no stored response fits (RFC 9111 §5.2.1.7).
        case notCached(url: String)
        /// A stored body could not be read back (after its head went out: the response breaks off).
        case cacheReadFailed(url: String)
    }

    /// The stable machine-readable code.
    public var code: String {
        switch self {
        case .requestRejected(let reason):
            switch reason {
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
            }
        case .upstreamFailed(let reason):
            switch reason {
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
        case .clientFailed(let reason):
            switch reason {
            case .headerTimedOut: return "client_header_timeout"
            case .tunnelIdleTimedOut: return "tunnel_idle_timeout"
            case .closed: return "client_closed"
            case .tlsHandshakeFailed: return "client_tls_handshake_failed"
            case .tlsHandshakeTimedOut: return "client_tls_handshake_timed_out"
            }
        case .sessionUnavailable(let reason):
            switch reason {
            case .tooManyConnections: return "too_many_connections"
            case .shuttingDown: return "shutting_down"
            case .networkUnreachable: return "network_unreachable"
            case .notCached: return "only_if_cached"
            case .cacheReadFailed: return "cache_read_failed"
            }
        case .serverTrustEvaluationFailed:
            return "server_trust_evaluation_failed"
        case .redirectFailed(let reason):
            switch reason {
            case .limitExceeded: return "redirect_limit_exceeded"
            case .loop: return "redirect_loop"
            case .downgradeRefused: return "redirect_downgrade_refused"
            }
        case .accessDenied(let reason):
            switch reason {
            case .clientNotAllowed: return "client_not_allowed"
            case .destinationDenied: return "destination_denied"
            case .destinationNetworkDenied: return "destination_network_denied"
            case .methodNotAllowed: return "method_not_allowed"
            }
        case .cancelledByOperator:
            return "cancelled_by_operator"
        case .injectedFault:
            return "injected_fault"
        case .mapFailed(let reason):
            switch reason {
            case .downgradeRefused: return "map_downgrade_refused"
            case .localFileUnreadable: return "map_local_unreadable"
            }
        case .stageHoldTimedOut:
            return "stage_hold_timed_out"
        }
    }

    /// The status sent to the client (RFC 9110 §15); nil when no response can be sent.
    public var status: Int? {
        switch self {
        case .requestRejected(let reason):
            switch reason {
            case .connectPortNotAllowed, .pinningRequiresInterception: return 403
            // RFC 9110 §15.5.20: this server is not able to produce a response for that target.
            case .adminListenerDoesNotProxy, .misdirectedRequest: return 421
            case .connectOverHTTP2: return 501
            // RFC 6750 §3.1: a missing or wrong bearer token.
            case .adminTokenRequired: return 401
            case .proxyAuthenticationRequired: return 407
            case .requestBodyTooLarge: return 413
            case .requestLineTooLong: return 414
            case .requestHeaderTooLarge, .headerListTooLarge: return 431
            case .unsupportedTransferCoding: return 501
            default: return 400
            }
        case .upstreamFailed(let reason):
            switch reason {
            case .connectTimedOut, .firstByteTimedOut, .idleTimedOut, .tlsHandshakeTimedOut: return 504
            case .parentProxyAuthenticationRequired: return 407
            default: return 502
            }
        case .clientFailed(let reason):
            switch reason {
            case .headerTimedOut: return 408
            // A tunnel's 200 went out long before; nothing more can be said over it.
            case .closed, .tlsHandshakeFailed, .tlsHandshakeTimedOut, .tunnelIdleTimedOut: return nil
            }
        case .sessionUnavailable(let reason):
            if case .notCached = reason { return 504 }
            return 503
        case .serverTrustEvaluationFailed, .redirectFailed, .cancelledByOperator:
            return 502
        case .accessDenied(let reason):
            if case .methodNotAllowed = reason { return 405 }
            return 403
        case .injectedFault(let reason):
            switch reason {
            case .status(let code, _): return code
            // The head went out before the reset: nothing more can be said.
            case .resetAfterBytes: return nil
            }
        case .mapFailed(let reason):
            switch reason {
            case .downgradeRefused: return 502
            case .localFileUnreadable: return 500
            }
        case .stageHoldTimedOut:
            return 504
        }
    }

    /// One human sentence.
    public var message: String {
        switch self {
        case .requestRejected(let reason):
            switch reason {
            case .malformedRequest(let detail): return "malformed request: \(detail)"
            case .conflictingFraming: return "request has both Content-Length and Transfer-Encoding"
            case .invalidContentLength: return "invalid or conflicting Content-Length"
            case .invalidChunkedEncoding: return "invalid chunked encoding in the request body"
            case .notAProxyRequest(let path):
                return "use Lookout as a proxy (e.g. curl -x http://HOST:PORT http://example.com/); \(path) is not served here"
            case .adminListenerDoesNotProxy:
                return "this address serves only Lookout's admin pages (admin.listen); send proxy requests to a listen address"
            case .adminTokenRequired:
                return "the admin pages ask for admin.token: send Authorization: Bearer TOKEN, or open /ui/?token=TOKEN once in a browser"
            case .missingHost(let detail): return "missing or mismatched Host: \(detail)"
            case .unsupportedScheme(let scheme): return "scheme \(scheme) is not supported in absolute-form requests (only http and https)"
            case .connectPortNotAllowed(let port): return "CONNECT to port \(port) is not allowed (connect.allowed_ports)"
            case .proxyAuthenticationRequired: return "send Proxy-Authorization: Basic credentials listed in auth.users"
            case .requestLineTooLong: return "request line exceeds limits.max_request_line_bytes"
            case .requestHeaderTooLarge: return "request header section exceeds limits.max_header_bytes or max_header_count"
            case .headerListTooLarge(let limit): return "request header list exceeds \(limit) bytes (http2.max_header_list_bytes)"
            case .requestBodyTooLarge(let limit): return "request body exceeds \(limit) bytes (limits.max_request_body_bytes)"
            case .unsupportedTransferCoding:
                return "Transfer-Encoding must end in one chunked, after gzip, deflate, compress or identity only"
            case .pinningRequiresInterception(let host, let rule):
                return "trust rule \(rule) pins \(host), which a blind tunnel cannot check; add the host to interception.hosts or set trust.pinning_without_interception: allow"
            case .misdirectedRequest(let authority, let origin):
                return "this HTTP/2 connection was opened for \(origin); open another one for \(authority)"
            case .connectOverHTTP2:
                return "CONNECT inside an intercepted HTTP/2 connection is not served; send it to the proxy itself"
            }
        case .upstreamFailed(let reason):
            switch reason {
            case .dnsFailed(let host, let message): return "cannot resolve \(host): \(message)"
            case .connectFailed(let detail): return "cannot connect upstream: \(detail)"
            case .connectTimedOut(let after): return "upstream connect timed out after \(Self.seconds(after))"
            case .firstByteTimedOut(let after): return "upstream sent no response within \(Self.seconds(after))"
            case .idleTimedOut(let after): return "upstream sent nothing for \(Self.seconds(after))"
            case .malformedResponse(let detail): return "malformed upstream response: \(detail)"
            case .closed(let detail): return "upstream closed the connection: \(detail)"
            case .tlsHandshakeFailed(let detail): return "upstream TLS handshake failed: \(detail)"
            case .tlsHandshakeTimedOut(let after): return "upstream TLS handshake not finished within \(Self.seconds(after))"
            case .parentProxyFailed(let proxy, let detail): return "parent proxy \(proxy): \(detail)"
            case .parentProxyAuthenticationRequired(let proxy, _):
                return "parent proxy \(proxy) refused the credentials the client sent for it (407)"
            case .streamReset(let stream, let code): return "the origin reset HTTP/2 stream \(stream) (\(code))"
            case .streamRefused(let detail): return "the origin did not process the request: \(detail)"
            }
        case .clientFailed(let reason):
            switch reason {
            case .headerTimedOut(let after): return "request head not received within \(Self.seconds(after))"
            case .tunnelIdleTimedOut(let after): return "nothing crossed the tunnel for \(Self.seconds(after))"
            case .closed(let detail): return "client closed the connection: \(detail)"
            case .tlsHandshakeFailed(let detail): return "client TLS handshake failed: \(detail)"
            case .tlsHandshakeTimedOut(let after): return "client TLS handshake not finished within \(Self.seconds(after))"
            }
        case .sessionUnavailable(let reason):
            switch reason {
            case .tooManyConnections(let limit): return "connection limit (\(limit)) reached"
            case .shuttingDown: return "Lookout is shutting down"
            case .networkUnreachable(let host):
                return "no route to the network for \(host): the machine has no default route (reachability.fail_fast)"
            case .notCached(let url):
                return "only-if-cached: no stored response for \(url) satisfies the request"
            case .cacheReadFailed(let url):
                return "the stored response for \(url) could not be read"
            }
        case .serverTrustEvaluationFailed(let error):
            return error.description
        case .redirectFailed(let reason):
            switch reason {
            case .limitExceeded(let maxHops): return "more than \(maxHops) redirects (redirects.rules max_hops)"
            case .loop(let url): return "redirect loop: \(url) was already requested in this chain"
            case .downgradeRefused(let location):
                return "redirect from https to \(location) refused (redirects.rules allow_downgrade)"
            }
        case .accessDenied(let reason):
            switch reason {
            case .clientNotAllowed(let client): return "client \(client) is not in access.clients"
            case .destinationDenied(let host, let pattern?): return "\(host) is denied by access.deny_hosts (\(pattern))"
            case .destinationDenied(let host, nil): return "\(host) is not in access.allow_hosts"
            case .destinationNetworkDenied(let host, let address, let network):
                return "\(host) is \(address), in \(network) (access.deny_networks)"
            case .methodNotAllowed(let method, _): return "method \(method) is not in access.methods"
            }
        case .cancelledByOperator(let operatorAddress):
            return "cancelled by the operator at \(operatorAddress) (DELETE /exchanges/ID on the admin endpoint)"
        case .injectedFault(let reason):
            switch reason {
            case .status(let code, let rule):
                return "status \(code) injected by the shaping rule for \(rule) (faults.status); the origin was not asked"
            case .resetAfterBytes(let bytes, let rule):
                return "connection reset after \(bytes) response bytes by the shaping rule for \(rule) (faults.reset_after_bytes)"
            }
        case .mapFailed(let reason):
            switch reason {
            case .downgradeRefused(let from, let to):
                return "map.remote sends \(from) to \(to), from https to http; set allow_downgrade: true on the rule to allow it"
            case .localFileUnreadable(let file, let detail):
                return "map.local file \(file) cannot be read: \(detail)"
            }
        case .stageHoldTimedOut(let stage, let after):
            return "the exchange was held (\(stage)) for \(Self.seconds(after)) without being let go"
        }
    }

    public var description: String { "\(code): \(message)" }

    /// True for failures caused by the upstream.
    public var isUpstreamFailure: Bool {
        switch self {
        case .upstreamFailed, .serverTrustEvaluationFailed: return true
        default: return false
        }
    }

    /// True for requests refused as invalid or not allowed.
    public var isRequestRejection: Bool {
        if case .requestRejected = self { return true }
        return false
    }

    /// True for timeouts on either side.
    public var isTimeout: Bool {
        switch self {
        case .upstreamFailed(.connectTimedOut), .upstreamFailed(.firstByteTimedOut),
             .upstreamFailed(.idleTimedOut), .clientFailed(.headerTimedOut), .clientFailed(.tunnelIdleTimedOut),
             .upstreamFailed(.tlsHandshakeTimedOut), .clientFailed(.tlsHandshakeTimedOut), .stageHoldTimedOut:
            return true
        default:
            return false
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

extension ProxyError {
    /// Maps a client-side parse failure to the reason the client is told (RFC 9112 §2.2, §6.3).
    public init(requestParseError error: HTTPParseError) {
        switch error {
        case .requestLineTooLong: self = .requestRejected(reason: .requestLineTooLong)
        case .headerSectionTooLarge, .tooManyHeaders: self = .requestRejected(reason: .requestHeaderTooLarge)
        case .conflictingFraming: self = .requestRejected(reason: .conflictingFraming)
        case .invalidContentLength: self = .requestRejected(reason: .invalidContentLength)
        case .invalidChunkedEncoding: self = .requestRejected(reason: .invalidChunkedEncoding)
        case .unsupportedTransferCoding: self = .requestRejected(reason: .unsupportedTransferCoding)
        case .missingHost: self = .requestRejected(reason: .missingHost("HTTP/1.1 requires exactly one Host header"))
        case .unexpectedEndOfStream: self = .clientFailed(reason: .closed("in the middle of a request"))
        case .invalidRequestLine: self = .requestRejected(reason: .malformedRequest("invalid request line"))
        case .invalidStatusLine: self = .requestRejected(reason: .malformedRequest("invalid start line"))
        case .unsupportedVersion: self = .requestRejected(reason: .malformedRequest("unsupported HTTP version"))
        case .invalidHeaderName: self = .requestRejected(reason: .malformedRequest("invalid header name"))
        case .invalidHeaderValue: self = .requestRejected(reason: .malformedRequest("invalid header value"))
        case .obsoleteLineFolding: self = .requestRejected(reason: .malformedRequest("obsolete line folding"))
        case .bareCarriageReturn: self = .requestRejected(reason: .malformedRequest("bare CR in the head"))
        }
    }

    /// Maps an upstream parse failure.
    public init(responseParseError error: HTTPParseError) {
        if case .unexpectedEndOfStream = error {
            self = .upstreamFailed(reason: .closed("before the response was complete"))
        } else {
            self = .upstreamFailed(reason: .malformedResponse("\(error)"))
        }
    }
}
