import Testing
@testable import LookoutModel
import LookoutHTTP
import LookoutTLS

@Suite struct ProxyErrorTests {
    /// The table in the README: every reason has one code and one status.
    @Test(arguments: [
        (ProxyError.requestRejected(reason: .malformedRequest("x")), "malformed_request", 400),
        (.requestRejected(reason: .conflictingFraming), "conflicting_framing", 400),
        (.requestRejected(reason: .invalidContentLength), "invalid_content_length", 400),
        (.requestRejected(reason: .invalidChunkedEncoding), "invalid_chunked_encoding", 400),
        (.requestRejected(reason: .notAProxyRequest(path: "/x")), "not_a_proxy_request", 400),
        (.requestRejected(reason: .missingHost("x")), "missing_host", 400),
        (.requestRejected(reason: .unsupportedScheme("https")), "unsupported_scheme", 400),
        (.requestRejected(reason: .connectPortNotAllowed(port: 80)), "connect_port_not_allowed", 403),
        (.requestRejected(reason: .proxyAuthenticationRequired), "proxy_authentication_required", 407),
        (.requestRejected(reason: .requestBodyTooLarge(limit: 1)), "request_body_too_large", 413),
        (.requestRejected(reason: .requestLineTooLong), "request_line_too_long", 414),
        (.requestRejected(reason: .requestHeaderTooLarge), "request_header_too_large", 431),
        (.requestRejected(reason: .unsupportedTransferCoding), "unsupported_transfer_coding", 501),
        (.clientFailed(reason: .headerTimedOut(after: 1)), "client_header_timeout", 408),
        (.upstreamFailed(reason: .dnsFailed(host: "h", message: "m")), "upstream_dns_failed", 502),
        (.upstreamFailed(reason: .connectFailed("x")), "upstream_connect_failed", 502),
        (.upstreamFailed(reason: .malformedResponse("x")), "upstream_malformed_response", 502),
        (.upstreamFailed(reason: .closed("x")), "upstream_closed", 502),
        (.upstreamFailed(reason: .connectTimedOut(after: 1)), "upstream_connect_timeout", 504),
        (.upstreamFailed(reason: .firstByteTimedOut(after: 1)), "upstream_first_byte_timeout", 504),
        (.upstreamFailed(reason: .idleTimedOut(after: 1)), "upstream_idle_timeout", 504),
        (.abortedByOperator(operatorAddress: "127.0.0.1:1"), "aborted_by_operator", 502),
        (.breakpointTimedOut(rule: "1: method:POST", after: 300), "breakpoint_timeout", 502),
        (.hookFailed(hook: "sign", detail: "no reply within 500 ms"), "hook_failed", 502),
        (.simulationMiss(detail: "the recordings hold no request"), "simulation_miss", 502),
        (.sessionUnavailable(reason: .tooManyConnections(limit: 1)), "too_many_connections", 503),
        (.sessionUnavailable(reason: .shuttingDown), "shutting_down", 503),
        (.requestRejected(reason: .pinningRequiresInterception(host: "h", rule: "r")), "pinning_requires_interception", 403),
        (.upstreamFailed(reason: .tlsHandshakeFailed("x")), "upstream_tls_handshake_failed", 502),
        (.upstreamFailed(reason: .tlsHandshakeTimedOut(after: 1)), "upstream_tls_handshake_timed_out", 504),
        (.serverTrustEvaluationFailed(reason: TrustEvaluationError(reason: .pinMismatch, message: "m", evaluator: "public-keys")),
         "server_trust_evaluation_failed", 502),
        (.accessDenied(reason: .policyDenied), "policy_denied", 403),
        (.accessDenied(reason: .rateLimited(retryAfter: 2)), "rate_limited", 429),
        (.accessDenied(reason: .concurrencyLimited(limit: 20)), "concurrency_limited", 503),
    ] as [(ProxyError, String, Int)])
    func mapsToOneCodeAndStatus(error: ProxyError, code: String, status: Int) {
        #expect(error.code == code)
        #expect(error.status == status)
        #expect(!error.message.isEmpty)
    }

    /// Connections that did not speak HTTP to Lookout get no HTTP answer: SOCKS5 replies, or a close.
    @Test(arguments: [
        (ProxyError.requestRejected(reason: .originalDestinationUnknown("x")), "original_destination_unknown"),
        (.requestRejected(reason: .redirectLoop(destination: "127.0.0.1:8081")), "capture_loop"),
        (.requestRejected(reason: .socksNoAcceptableMethod(offered: [2])), "socks_no_acceptable_method"),
        (.requestRejected(reason: .socksAuthenticationFailed), "socks_authentication_failed"),
        (.requestRejected(reason: .socksMalformed("cut")), "socks_malformed_request"),
        (.requestRejected(reason: .socksCommandNotSupported(command: 2)), "socks_command_not_supported"),
    ] as [(ProxyError, String)])
    func capturedConnectionsAreRefusedWithoutHTTP(error: ProxyError, code: String) {
        #expect(error.code == code && error.status == nil && !error.message.isEmpty)
    }

    @Test func clientCloseSendsNoResponse() {
        #expect(ProxyError.clientFailed(reason: .closed("reset")).status == nil)
        #expect(ProxyError.clientFailed(reason: .closed("reset")).code == "client_closed")
    }

    @Test func clientTLSFailuresSendNoResponse() {
        #expect(ProxyError.clientFailed(reason: .tlsHandshakeFailed("unknown ca")).code == "client_tls_handshake_failed")
        #expect(ProxyError.clientFailed(reason: .tlsHandshakeFailed("unknown ca")).status == nil)
        #expect(ProxyError.clientFailed(reason: .tlsHandshakeTimedOut(after: 1)).code == "client_tls_handshake_timed_out")
        #expect(ProxyError.clientFailed(reason: .tlsHandshakeTimedOut(after: 1)).status == nil)
    }

    @Test func anIdleTunnelIsATimeoutWithNothingToSend() {
        let error = ProxyError.clientFailed(reason: .tunnelIdleTimedOut(after: 3600))
        #expect(error.code == "tunnel_idle_timeout")
        #expect(error.status == nil)
        #expect(error.isTimeout)
        #expect(error.message == "nothing crossed the tunnel for 3600 s")
    }

    @Test func trustFailureMessageStartsWithTheReasonCode() {
        let error = ProxyError.serverTrustEvaluationFailed(reason: TrustEvaluationError(
            reason: .pinMismatch, message: "no pin matched", evaluator: "public-keys"))
        #expect(error.message.hasPrefix("pin_mismatch: no pin matched"))
        #expect(error.isUpstreamFailure)
    }

    @Test func parseErrorsMapToTheirCodes() {
        #expect(ProxyError(requestParseError: .requestLineTooLong).code == "request_line_too_long")
        #expect(ProxyError(requestParseError: .tooManyHeaders).code == "request_header_too_large")
        #expect(ProxyError(requestParseError: .obsoleteLineFolding).code == "malformed_request")
        #expect(ProxyError(requestParseError: .conflictingFraming).code == "conflicting_framing")
        #expect(ProxyError(responseParseError: .unexpectedEndOfStream).code == "upstream_closed")
        #expect(ProxyError(responseParseError: .invalidStatusLine).code == "upstream_malformed_response")
    }
}
