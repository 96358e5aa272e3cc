extension ProxyError.RequestRejectionReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
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
        case .originalDestinationUnknown(let detail):
            return "no original destination for a connection on a transparent listener (\(detail)); send it here with an nftables/iptables REDIRECT or TPROXY rule"
        case .redirectLoop(let destination):
            return "the connection's original destination \(destination) is Lookout's own listener; exclude Lookout's ports from the redirect rule"
        case .socksNoAcceptableMethod(let offered):
            let names = offered.map { String($0, radix: 16) }.joined(separator: ", ")
            return "the SOCKS5 greeting offers no acceptable method (offered: [\(names)]; this listener takes \"no authentication\" (00) or, with auth.users, username/password (02))"
        case .socksAuthenticationFailed: return "SOCKS5 username/password is not one of auth.users"
        case .socksMalformed(let detail): return "malformed SOCKS5 message: \(detail)"
        case .socksCommandNotSupported(let command):
            return "SOCKS5 command \(command) is not supported (only CONNECT, 1; BIND and UDP ASSOCIATE are refused)"
        }
    }
}

extension ProxyError.UpstreamFailureReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
        case .dnsFailed(let host, let message): return "cannot resolve \(host): \(message)"
        case .connectFailed(let detail): return "cannot connect upstream: \(detail)"
        case .connectTimedOut(let after): return "upstream connect timed out after \(ProxyError.seconds(after))"
        case .firstByteTimedOut(let after): return "upstream sent no response within \(ProxyError.seconds(after))"
        case .idleTimedOut(let after): return "upstream sent nothing for \(ProxyError.seconds(after))"
        case .malformedResponse(let detail): return "malformed upstream response: \(detail)"
        case .closed(let detail): return "upstream closed the connection: \(detail)"
        case .tlsHandshakeFailed(let detail): return "upstream TLS handshake failed: \(detail)"
        case .tlsHandshakeTimedOut(let after): return "upstream TLS handshake not finished within \(ProxyError.seconds(after))"
        case .parentProxyFailed(let proxy, let detail): return "parent proxy \(proxy): \(detail)"
        case .parentProxyAuthenticationRequired(let proxy, _):
            return "parent proxy \(proxy) refused the credentials the client sent for it (407)"
        case .streamReset(let stream, let code): return "the origin reset HTTP/2 stream \(stream) (\(code))"
        case .streamRefused(let detail): return "the origin did not process the request: \(detail)"
        }
    }
}

extension ProxyError.ClientFailureReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
        case .headerTimedOut(let after): return "request head not received within \(ProxyError.seconds(after))"
        case .tunnelIdleTimedOut(let after): return "nothing crossed the tunnel for \(ProxyError.seconds(after))"
        case .closed(let detail): return "client closed the connection: \(detail)"
        case .tlsHandshakeFailed(let detail): return "client TLS handshake failed: \(detail)"
        case .tlsHandshakeTimedOut(let after): return "client TLS handshake not finished within \(ProxyError.seconds(after))"
        }
    }
}

extension ProxyError.SessionUnavailableReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
        case .tooManyConnections(let limit): return "connection limit (\(limit)) reached"
        case .shuttingDown: return "Lookout is shutting down"
        case .networkUnreachable(let host):
            return "no route to the network for \(host): the machine has no default route (reachability.fail_fast)"
        case .notCached(let url):
            return "only-if-cached: no stored response for \(url) satisfies the request"
        case .cacheReadFailed(let url):
            return "the stored response for \(url) could not be read"
        }
    }
}

extension ProxyError.RedirectFailureReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
        case .limitExceeded(let maxHops): return "more than \(maxHops) redirects (redirects.rules max_hops)"
        case .loop(let url): return "redirect loop: \(url) was already requested in this chain"
        case .downgradeRefused(let location):
            return "redirect from https to \(location) refused (redirects.rules allow_downgrade)"
        }
    }
}

extension ProxyError.AccessDenialReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
        case .clientNotAllowed(let client): return "client \(client) is not in access.clients"
        case .destinationDenied(let host, let pattern?): return "\(host) is denied by access.deny_hosts (\(pattern))"
        case .destinationDenied(let host, nil): return "\(host) is not in access.allow_hosts"
        case .destinationNetworkDenied(let host, let address, let network):
            return "\(host) is \(address), in \(network) (access.deny_networks)"
        case .methodNotAllowed(let method, _): return "method \(method) is not in access.methods"
        case .policyDenied: return "the egress policy does not allow this request"
        case .rateLimited(let seconds): return "too many requests for this client's role; try again in \(seconds) s"
        case .concurrencyLimited(let limit): return "this client's role has \(limit) exchanges in flight already (max_concurrent)"
        }
    }
}

extension ProxyError.InjectedFaultReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
        case .status(let code, let rule):
            return "status \(code) injected by the shaping rule for \(rule) (faults.status); the origin was not asked"
        case .resetAfterBytes(let bytes, let rule):
            return "connection reset after \(bytes) response bytes by the shaping rule for \(rule) (faults.reset_after_bytes)"
        }
    }
}

extension ProxyError.MapFailureReason {
    /// One human sentence saying what happened and which setting is involved.
    public var message: String {
        switch self {
        case .downgradeRefused(let from, let to):
            return "map.remote sends \(from) to \(to), from https to http; set allow_downgrade: true on the rule to allow it"
        case .localFileUnreadable(let file, let detail):
            return "map.local file \(file) cannot be read: \(detail)"
        }
    }
}
