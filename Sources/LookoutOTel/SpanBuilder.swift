import LookoutHTTP
import LookoutModel

/// An exchange's spans, from its summary record: the exchange (SERVER, or the tunnel's), and one
/// CLIENT span per upstream attempt with the phases and the trust decision as events. Attributes
/// follow the OpenTelemetry HTTP semantic conventions; Lookout's own are under `lookout.*`. Times
/// are the summary's own clock readings, so a span and its log line agree to the microsecond.
enum SpanBuilder {
    /// The exchange's spans as values (OTLP/JSON, tests).
    static func spans(_ s: borrowing ExchangeSummary, trace: TraceContext, target: URLParts? = nil) -> [SpanRecord] {
        var sink = SpanRecordSink()
        write(s, trace: trace, target: target ?? URLParts(s.url, kind: s.kind), into: &sink)
        return sink.spans
    }

    /// Writes the exchange's spans into `sink`: the SERVER span (with its decisions as events),
    /// then a CLIENT span per attempt. `target` is what was read from the summary's URL.
    static func write<Sink: SpanSink & ~Copyable>(_ s: borrowing ExchangeSummary, trace: TraceContext, target: URLParts,
                                                 into sink: inout Sink) {
        sink.begin(SpanHead(traceIDHigh: trace.traceIDHigh, traceIDLow: trace.traceIDLow, spanID: trace.spanID,
                            parentSpanID: trace.parentSpanID, parentIsRemote: trace.parentSpanID != nil,
                            traceState: trace.traceState, name: s.method, kind: .server,
                            start: s.start.unixNanoseconds, end: s.end.unixNanoseconds))
        serverAttributes(s, target, into: &sink)
        if let error = s.error {
            sink.status(code: 2, message: error.message)
        } else if let status = s.status, status >= 500 {
            // A server span is an error at 5xx (semantic conventions, HTTP spans "Status").
            sink.status(code: 2, message: "")
        }
        if let cache = s.cache {
            sink.event(time: s.start.unixNanoseconds, name: "cache", attributes: [
                ("lookout.cache.status", .string(cache.status)), ("lookout.cache.stored", .bool(cache.stored)),
            ])
        }
        // `transactions` lists the attempts when there were several; one attempt is `upstream`
        // alone. Read in place: no array and no copy of the metrics per exchange.
        for index in s.transactions.indices.dropFirst() {
            decision(after: s.transactions[index - 1], next: s.transactions[index], number: index + 1, into: &sink)
        }
        sink.end()
        if s.transactions.isEmpty {
            // Unwrapped after one check: `if let` would also retain and release each of its strings.
            if s.upstream != nil { clientSpan(s, s.upstream.unsafelyUnwrapped, number: 1, trace: trace, target: target, into: &sink) }
        } else {
            for index in s.transactions.indices {
                clientSpan(s, s.transactions[index], number: index + 1, trace: trace, target: target, into: &sink)
            }
        }
    }

    /// The CLIENT span of attempt `number`; an attempt to the exchange's own URL (most of them)
    /// reuses what was read from it.
    private static func clientSpan<Sink: SpanSink & ~Copyable>(_ s: borrowing ExchangeSummary, _ attempt: TransactionMetrics,
                                                              number: Int, trace: TraceContext, target: URLParts,
                                                              into sink: inout Sink) {
        let url = attempt.url ?? ""
        let parts = s.kind != .tunnel && url == s.url ? target : URLParts(url, kind: .http)
        client(attempt, parts, number: number, method: s.method, trace: trace, exchangeEnd: s.end, into: &sink)
    }

    /// What the spans say of a URL: `url.full` redacted, `server.address` and `server.port`.
    struct URLParts {
        var redacted: String
        var host: String
        var port: Int

        /// One scan of the URL for all three.
        init(_ url: String, kind: ExchangeSummary.Kind) {
            let (redacted, host, port) = url.withUTF8InPlace { bytes in
                let layout = URLAuthority.Layout(bytes)
                let (host, port) = SpanBuilder.hostAndPort(bytes, layout, kind: kind)
                return (SpanBuilder.redacted(bytes, layout), host, port)
            }
            (self.redacted, self.host, self.port) = (redacted ?? url, host, port)
        }
    }

    private static func serverAttributes<Sink: SpanSink & ~Copyable>(_ s: borrowing ExchangeSummary, _ target: URLParts, into a: inout Sink) {
        a.attribute("http.request.method", .string(s.method))
        a.attribute("url.full", .string(target.redacted))
        a.attribute("server.address", .string(target.host))
        a.attribute("server.port", .int(Int64(target.port)))
        a.attribute("network.protocol.version", .string(protocolVersion(s.httpVersion)))
        a.attribute("lookout.kind", .string(s.kind.rawValue))
        a.attribute("lookout.id", .int(Int64(s.requestID)))
        a.attribute("lookout.attempts", .int(Int64(s.attempts)))
        a.attribute("lookout.redirects", .int(Int64(s.redirects)))
        let (clientHost, clientPort) = splitAddress(s.clientAddress)
        a.attribute("client.address", .string(clientHost))
        if let clientPort { a.attribute("client.port", .int(Int64(clientPort))) }
        if let status = s.status { a.attribute("http.response.status_code", .int(Int64(status))) }
        if let agent = s.requestHeaders?.value(for: .userAgent) { a.attribute("user_agent.original", .string(agent)) }
        if let error = s.error {
            a.attribute("error.type", .string(error.code))
            a.attribute("lookout.error.code", .string(error.code))
        } else if let status = s.status, status >= 500 {
            a.attribute("error.type", .string(String(status)))
        }
        if let cache = s.cache { a.attribute("lookout.cache.status", .string(cache.status)) }
        // One check, then the attempt read in place: each `s.upstream?.field` copies all of it.
        let hasUpstream = s.upstream != nil
        if hasUpstream, let trust = s.upstream.unsafelyUnwrapped.tlsBox?.value.trust {
            a.attribute("lookout.trust.rule", .string(trust.rule))
            a.attribute("lookout.trust.result", .string(trust.outcome.rawValue))
            if !trust.presentedPins.isEmpty { a.attribute("lookout.trust.presented_pins", .strings(trust.presentedPins)) }
        }
        if let sent = s.tunnelBytesClientToUpstream { a.attribute("lookout.bytes.client_to_upstream", .int(Int64(sent))) }
        if let received = s.tunnelBytesUpstreamToClient { a.attribute("lookout.bytes.upstream_to_client", .int(Int64(received))) }
        if hasUpstream {
            a.attribute("lookout.bytes.request_body", .int(Int64(s.upstream.unsafelyUnwrapped.requestBodyBytes)))
            a.attribute("lookout.bytes.response_body", .int(Int64(s.upstream.unsafelyUnwrapped.responseBodyBytes)))
        }
        if let messages = s.messages {
            a.attribute("lookout.messages.protocol", .string(messages.protocolName))
            a.attribute("lookout.messages.count", .int(Int64(messages.count)))
            if let first = messages.firstEventMilliseconds { a.attribute("lookout.messages.first_event_ms", .double(first)) }
        }
        if let upgrade = s.upgrade { a.attribute("lookout.upgrade", .string(upgrade)) }
        if let policy = s.policy {
            a.attribute("lookout.policy.role", .string(policy.role))
            a.attribute("lookout.policy.identity", .string(policy.identity))
            a.attribute("lookout.policy.mode", .string(policy.mode))
            a.attribute("lookout.policy.decision", .string(policy.decision))
            a.attribute("lookout.policy.would_deny", .bool(policy.wouldDeny))
            a.attribute("lookout.policy.rule", .string(policy.rule))
        }
        if let captured = s.captured {
            a.attribute("lookout.capture", .string(captured.method))
            a.attribute("lookout.original_destination", .string(captured.destination))
        }
    }

    /// A CLIENT span for upstream attempt `number` (1-based).
    private static func client<Sink: SpanSink & ~Copyable>(_ t: TransactionMetrics, _ target: URLParts, number: Int, method: String,
                                              trace: TraceContext, exchangeEnd: Instant, into sink: inout Sink) {
        sink.begin(SpanHead(traceIDHigh: trace.traceIDHigh, traceIDLow: trace.traceIDLow, spanID: trace.attemptSpanID(number),
                            parentSpanID: trace.spanID, traceState: trace.traceState, name: method, kind: .client,
                            start: t.fetchStart.unixNanoseconds, end: (t.responseEnd ?? exchangeEnd).unixNanoseconds))
        sink.attribute("http.request.method", .string(method))
        sink.attribute("url.full", .string(target.redacted))
        sink.attribute("server.address", .string(target.host))
        sink.attribute("server.port", .int(Int64(target.port)))
        sink.attribute("network.protocol.name", .string("http"))
        sink.attribute("network.protocol.version", .string(t.networkProtocolName == "h2" ? "2" : "1.1"))
        sink.attribute("lookout.connection.reused", .bool(t.isReusedConnection))
        if number > 1 { sink.attribute("http.request.resend_count", .int(Int64(number - 1))) }
        if let status = t.statusCode { sink.attribute("http.response.status_code", .int(Int64(status))) }
        if let address = t.remoteAddress {
            let (peer, peerPort) = splitAddress(address)
            sink.attribute("network.peer.address", .string(peer))
            if let peerPort { sink.attribute("network.peer.port", .int(Int64(peerPort))) }
        }
        if let proxy = t.proxy { sink.attribute("lookout.proxy", .string(proxy)) }
        if let code = t.errorCode {
            sink.attribute("error.type", .string(code))
        } else if let status = t.statusCode, status >= 400 {
            sink.attribute("error.type", .string(String(status)))  // a client span is an error at 4xx and 5xx
        }
        if t.errorCode != nil || (t.statusCode ?? 0) >= 400 { sink.status(code: 2, message: "") }
        func phase(_ name: String, _ start: Instant?, _ end: Instant?, _ extra: OTelAttributes = []) {
            guard let start, let end else { return }
            sink.event(time: start.unixNanoseconds, name: name,
                       attributes: [("lookout.duration_ms", .double(end.milliseconds(since: start)))] + extra)
        }
        phase("dns", t.domainLookupStart, t.domainLookupEnd)
        phase("connect", t.connectStart, t.connectEnd)
        if let tls = t.tlsBox?.value {
            var extra: OTelAttributes = [("tls.protocol.version", .string(tls.version)), ("tls.cipher", .string(tls.cipher)),
                                         ("lookout.trust.rule", .string(tls.trust.rule)),
                                         ("lookout.trust.evaluator", .string(tls.trust.evaluator)),
                                         ("lookout.trust.result", .string(tls.trust.outcome.rawValue))]
            if let reason = tls.trust.reason { extra.append(("lookout.trust.reason", .string(reason))) }
            if !tls.trust.presentedPins.isEmpty { extra.append(("lookout.trust.presented_pins", .strings(tls.trust.presentedPins))) }
            phase("tls", t.secureConnectionStart ?? t.connectEnd, t.secureConnectionEnd ?? t.secureConnectionStart, extra)
        }
        sink.end()
    }

    /// Why attempt `number` followed the one before: a followed redirect, or a retry.
    private static func decision<Sink: SpanSink & ~Copyable>(after previous: TransactionMetrics, next: TransactionMetrics, number: Int,
                                                 into sink: inout Sink) {
        let time = next.fetchStart.unixNanoseconds
        if let status = previous.statusCode, (300..<400).contains(status), previous.url != next.url {
            sink.event(time: time, name: "redirect", attributes: [
                ("lookout.redirect.from", .string(redacted(previous.url ?? ""))), ("lookout.redirect.to", .string(redacted(next.url ?? ""))),
                ("http.response.status_code", .int(Int64(status))), ("lookout.redirect.decision", .string("follow")),
            ])
            return
        }
        let reason = previous.errorCode ?? previous.statusCode.map { String($0) } ?? "unknown"
        let delay = (previous.responseEnd ?? previous.fetchStart).milliseconds(since: previous.fetchStart)
        sink.event(time: time, name: "retry", attributes: [
            ("lookout.retry.attempt", .int(Int64(number))), ("lookout.retry.reason", .string(reason)),
            ("lookout.retry.delay_ms", .double(max(0, next.fetchStart.milliseconds(since: previous.responseEnd ?? previous.fetchStart)))),
            ("lookout.retry.previous_ms", .double(delay)),
        ])
    }

    // MARK: - Helpers

    /// `network.protocol.version` from the log's `HTTP/1.1`: `1.1`.
    static func protocolVersion(_ version: String) -> String {
        switch version {
        case "HTTP/1.1": "1.1"
        case "HTTP/2": "2"
        case "HTTP/1.0": "1.0"
        default: version.hasPrefix("HTTP/") ? String(version.dropFirst(5)) : version
        }
    }

    /// `url.full` without credentials (semantic conventions: userinfo replaced by REDACTED).
    /// Read as bytes in place: URLs are ASCII, and this runs for every exchange.
    static func redacted(_ url: String) -> String {
        url.withUTF8InPlace { redacted($0, URLAuthority.Layout($0)) } ?? url
    }

    /// The URL without its credentials; nil when it has none.
    private static func redacted(_ bytes: UnsafeBufferPointer<UInt8>, _ layout: URLAuthority.Layout) -> String? {
        guard layout.start > 0, let at = layout.at else { return nil }
        return text(bytes, 0..<layout.start) + "REDACTED:REDACTED" + text(bytes, at..<bytes.count)
    }

    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// The host and port a URL (or a tunnel's `host:port`) names; without a port, the scheme's
    /// (a tunnel's: 443).
    static func hostAndPort(_ url: String, kind: ExchangeSummary.Kind) -> (String, Int) {
        url.withUTF8InPlace { hostAndPort($0, URLAuthority.Layout($0), kind: kind) }
    }

    private static func hostAndPort(_ bytes: UnsafeBufferPointer<UInt8>, _ layout: URLAuthority.Layout,
                                    kind: ExchangeSummary.Kind) -> (String, Int) {
        let defaultPort = layout.start == 0 ? (kind == .tunnel ? 443 : 80) : layout.isHTTPS ? 443 : 80
        return (text(bytes, layout.bareHost), layout.port ?? defaultPort)
    }

    /// `host:port`, `[v6]:port` or a bare host (a peer's address as the log writes it).
    static func splitAddress(_ address: String) -> (String, Int?) {
        address.withUTF8InPlace { bytes in
            let layout = URLAuthority.Layout(bytes)
            return (text(bytes, layout.bareHost), layout.port)
        }
    }
}
