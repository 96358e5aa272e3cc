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
    /// An operator aborted a held exchange (`POST /exchanges/ID/abort`).
    case abortedByOperator(operatorAddress: String)
    /// A breakpoint held the exchange for its whole `timeout` with `on_timeout: abort`.
    case breakpointTimedOut(rule: String, after: Double)
    /// A hook failed (it timed out, exited, or replied with something unusable) and its
    /// `on_failure` is `abort`, or it answered `abort` itself.
    case hookFailed(hook: String, detail: String)
    /// `simulate.mode: simulate` and no recorded request matches (`closest` names the nearest one).
    case simulationMiss(detail: String)

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
        /// The client's role (`policy`) does not allow this request. The role and rule are in the
        /// record's `policy`, never in the answer.
        case policyDenied
        /// The role's `rate` is spent; a token comes back after `retryAfter` seconds.
        case rateLimited(retryAfter: Int)
        /// The role has `max_concurrent` exchanges and tunnels in flight.
        case concurrencyLimited(limit: Int)
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
        /// A connection on a transparent listener whose original destination cannot be read
        /// (it was not redirected by nftables/iptables, or connection tracking is off).
        case originalDestinationUnknown(String)
        /// A transparent connection whose original destination is one of Lookout's own listeners.
        case redirectLoop(destination: String)
        /// A SOCKS5 greeting that offers no method this listener accepts (RFC 1928 §3).
        case socksNoAcceptableMethod(offered: [UInt8])
        /// SOCKS5 username/password (RFC 1929) not in `auth.users`.
        case socksAuthenticationFailed
        /// A SOCKS5 message that is cut short or not SOCKS5.
        case socksMalformed(String)
        /// A SOCKS5 command other than CONNECT (BIND, UDP ASSOCIATE; RFC 1928 §4).
        case socksCommandNotSupported(command: UInt8)
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
        case .requestRejected(let reason): return reason.code
        case .upstreamFailed(let reason): return reason.code
        case .clientFailed(let reason): return reason.code
        case .sessionUnavailable(let reason): return reason.code
        case .serverTrustEvaluationFailed:
            return "server_trust_evaluation_failed"
        case .redirectFailed(let reason): return reason.code
        case .accessDenied(let reason): return reason.code
        case .cancelledByOperator:
            return "cancelled_by_operator"
        case .injectedFault:
            return "injected_fault"
        case .mapFailed(let reason): return reason.code
        case .stageHoldTimedOut:
            return "stage_hold_timed_out"
        case .abortedByOperator:
            return "aborted_by_operator"
        case .breakpointTimedOut:
            return "breakpoint_timeout"
        case .hookFailed:
            return "hook_failed"
        case .simulationMiss:
            return "simulation_miss"
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
            // Answered in SOCKS5, or not at all: these clients did not speak HTTP to Lookout.
            case .originalDestinationUnknown, .redirectLoop, .socksNoAcceptableMethod, .socksAuthenticationFailed,
                 .socksMalformed, .socksCommandNotSupported:
                return nil
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
        case .serverTrustEvaluationFailed, .redirectFailed, .cancelledByOperator, .abortedByOperator,
             .breakpointTimedOut, .hookFailed, .simulationMiss:
            return 502
        case .accessDenied(let reason):
            switch reason {
            case .methodNotAllowed: return 405
            case .rateLimited: return 429  // RFC 6585 §4
            case .concurrencyLimited: return 503
            default: return 403
            }
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
        case .requestRejected(let reason): return reason.message
        case .upstreamFailed(let reason): return reason.message
        case .clientFailed(let reason): return reason.message
        case .sessionUnavailable(let reason): return reason.message
        case .serverTrustEvaluationFailed(let error):
            return error.description
        case .redirectFailed(let reason): return reason.message
        case .accessDenied(let reason): return reason.message
        case .cancelledByOperator(let operatorAddress):
            return "cancelled by the operator at \(operatorAddress) (DELETE /exchanges/ID on the admin endpoint)"
        case .injectedFault(let reason): return reason.message
        case .mapFailed(let reason): return reason.message
        case .stageHoldTimedOut(let stage, let after):
            return "the exchange was held (\(stage)) for \(Self.seconds(after)) without being let go"
        case .abortedByOperator(let operatorAddress):
            return "aborted by the operator at \(operatorAddress) while held at a breakpoint (POST /exchanges/ID/abort)"
        case .breakpointTimedOut(let rule, let after):
            return "held at breakpoint \(rule) for \(Self.seconds(after)) without being resumed (on_timeout: abort)"
        case .hookFailed(let hook, let detail):
            return "hook \(hook): \(detail)"
        case .simulationMiss(let detail):
            return "no recorded answer (simulate.mode: simulate): \(detail)"
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

    /// "5 s", "0.5 s".
    static func seconds(_ value: Double) -> String {
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
