#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import LookoutModel

/// How records are rendered.
struct LogRecordOptions: Sendable {
    /// Write secret header values and URL passwords as they are.
    var revealSecrets: Bool
    /// Add `request_headers` / `response_headers` to summary records.
    var includeHeaders: Bool

    /// Tells records written with these options from others where monitors share a record
    /// (`FinishedExchange.share(record:format:)`).
    var sharedRecordFormat: UInt8 { (revealSecrets ? 1 : 0) | (includeHeaders ? 2 : 0) }
}

/// The record format version written as `"v"`.
let logRecordVersion = 1

// MARK: - Summary record

extension JSONBuffer {
    /// One `"event":"exchange"` line (the summary record; every field is described in `LOG.md` beside this file).
    /// `inFlightPhase`: the exchange is still running (`GET /exchanges?state=in_flight`); the
    /// record then says `"state":"in_flight"` and the phase, and `ts` is when it was looked at.
    mutating func appendSummaryRecord(_ s: borrowing ExchangeSummary, options: LogRecordOptions,
                                      inFlightPhase: String? = nil) {
        beginObject()
        key("v"); int(logRecordVersion)
        key("ts"); timestamp(unixMicroseconds: s.end.unixMicroseconds)
        key("event"); string("exchange" as StaticString)
        if let inFlightPhase {
            key("state"); string("in_flight" as StaticString)
            key("phase"); string(inFlightPhase)
        }
        key("id"); uint(s.requestID)
        key("conn"); uint(s.connectionID)
        key("client"); string(s.clientAddress)
        key("kind"); string(s.kind.rawValue)
        key("method"); string(s.method)
        key("url"); string(redactingURL(s.url, options: options))
        key("http_version"); string(s.httpVersion)
        if let stream = s.clientStreamID { key("stream_id"); int(Int(stream)) }
        if let status = s.status { key("status"); int(status) }
        // Checked once, then read in place (`appendUpstream`).
        let hasUpstream = s.upstream != nil
        if hasUpstream { key("upstream"); appendUpstream(of: s) }
        key("timings_ms"); appendTimings(s, hasUpstream: hasUpstream)
        key("bytes"); appendBytes(s, hasUpstream: hasUpstream)
        if let upgrade = s.upgrade {
            key("upgrade"); string(upgrade)
        }
        if s.kind == .tunnel || s.upgrade != nil {
            key("duration_ms"); milliseconds(s.totalMilliseconds)
        }
        key("attempts"); int(s.attempts)
        key("redirects"); int(s.redirects)
        if let finalURL = s.finalURL { key("final_url"); string(redactingURL(finalURL, options: options)) }
        if s.transactions.count > 1 {
            key("transactions"); appendTransactions(s.transactions, options: options)
        }
        if let cache = s.cache { key("cache"); appendCache(cache) }
        if let error = s.error { key("error"); appendError(error) }
        if let mappedFrom = s.mappedFrom { key("mapped_from"); string(redactingURL(mappedFrom, options: options)) }
        if let shaping = s.shaping { key("shaping"); appendShaping(shaping) }
        if let held = s.heldMilliseconds { key("held_ms"); milliseconds(held) }
        appendStageFields(s)
        if let policy = s.policy {
            key("policy"); beginObject()
            key("role"); string(policy.role)
            key("identity"); string(policy.identity)
            key("mode"); string(policy.mode)
            key("decision"); string(policy.decision)
            key("would_deny"); bool(policy.wouldDeny)
            key("rule"); string(policy.rule)
            key("reason"); string(policy.reason)
            endObject()
        }
        if let captured = s.captured {
            key("capture"); string(captured.method)
            key("original_destination"); string(captured.destination)
        }
        // On a captured connection `capture` names the listener's kind, so the body files move.
        if let capture = s.capture { key(s.captured == nil ? "capture" : "body_capture"); appendCapture(capture) }
        // A captured exchange always carries its headers: the files are its bodies.
        if options.includeHeaders || s.capture != nil {
            if let fields = s.requestHeaders { key("request_headers"); appendHeaders(fields, options: options) }
            if let fields = s.responseHeaders { key("response_headers"); appendHeaders(fields, options: options) }
        }
        endObject()
        endLine()
    }

    /// What later stages added: rules that changed the exchange, a simulated answer, message
    /// counts, audit findings, the client's JA4, the trace, and where a resend came from.
    private mutating func appendStageFields(_ s: borrowing ExchangeSummary) {
        if !s.modifiedBy.isEmpty {
            key("modified_by"); beginArray()
            for name in s.modifiedBy { element(); string(name) }
            endArray()
        }
        if let simulated = s.simulated {
            key("simulated"); beginObject()
            key("recording"); string(simulated.recording)
            key("entry"); int(simulated.entry)
            endObject()
        }
        if let messages = s.messages { key("messages"); appendMessages(messages) }
        if !s.findings.isEmpty {
            key("findings"); beginArray()
            for finding in s.findings {
                element(); beginObject()
                key("id"); string(finding.id)
                key("severity"); string(finding.severity.rawValue)
                key("cwe"); int(finding.cwe)
                key("evidence"); string(finding.evidence)
                endObject()
            }
            endArray()
        }
        if let ja4 = s.clientJA4 {
            key("tls"); beginObject()
            key("client_ja4"); string(ja4)
            endObject()
        }
        if let trace = s.trace {
            // The exchange's trace (`otel`): the same ids as its spans and OTLP log record.
            key("trace"); beginObject()
            key("trace_id"); string(trace.traceIDHex)
            key("span_id"); string(TraceContext.hex(trace.spanID))
            if let parent = trace.parentSpanID { key("parent_span_id"); string(TraceContext.hex(parent)) }
            key("sampled"); bool(trace.sampled)
            endObject()
        }
        if let resentFrom = s.resentFrom {
            key("resent_from"); uint(resentFrom)
            if let resentBy = s.resentBy { key("resent_by"); string(resentBy) }
        }
    }

    /// `{address, proxy, protocol, reused, stream_id, tls}` of the last attempt, which is there.
    ///
    /// Read through `unsafelyUnwrapped` after the caller's one check: each `s.upstream?.field`
    /// copies the whole 352-byte attempt to test it, and `if let upstream` also retains and
    /// releases each of its strings (Swift 6.3 -O, read with `objdump`).
    private mutating func appendUpstream(of s: borrowing ExchangeSummary) {
        beginObject()
        if let address = s.upstream.unsafelyUnwrapped.remoteAddress { key("address"); string(address) }
        if let proxy = s.upstream.unsafelyUnwrapped.proxy { key("proxy"); string(proxy) }
        key("protocol"); string(s.upstream.unsafelyUnwrapped.networkProtocolName)
        key("reused"); bool(s.upstream.unsafelyUnwrapped.isReusedConnection)
        if let stream = s.upstream.unsafelyUnwrapped.upstreamStreamID { key("stream_id"); int(Int(stream)) }
        if let tls = s.upstream.unsafelyUnwrapped.tlsBox { key("tls"); appendTLS(tls.value) }
        endObject()
    }

    /// HAR's phases: what earlier attempts and backoffs took, then the last attempt's phases.
    private mutating func appendTimings(_ s: borrowing ExchangeSummary, hasUpstream: Bool) {
        beginObject()
        let phases = hasUpstream ? s.upstream.unsafelyUnwrapped.phases
                                 : (dns: -1, connect: -1, tls: -1, send: -1, wait: -1, receive: -1)
        key("blocked"); milliseconds(hasUpstream ? s.upstream.unsafelyUnwrapped.fetchStart.milliseconds(since: s.start) : -1)
        key("dns"); milliseconds(phases.dns)
        key("connect"); milliseconds(phases.connect)
        key("tls"); milliseconds(phases.tls)
        key("send"); milliseconds(phases.send)
        key("wait"); milliseconds(phases.wait)
        key("receive"); milliseconds(phases.receive)
        key("total"); milliseconds(s.totalMilliseconds)
        endObject()
    }

    /// Heads and bodies on the upstream wire; a tunnel's (or switched protocol's) bytes each way.
    private mutating func appendBytes(_ s: borrowing ExchangeSummary, hasUpstream: Bool) {
        beginObject()
        if s.kind == .tunnel {
            key("client_to_upstream"); uint(s.tunnelBytesClientToUpstream ?? 0)
            key("upstream_to_client"); uint(s.tunnelBytesUpstreamToClient ?? 0)
        } else {
            key("request_headers"); uint(hasUpstream ? s.upstream.unsafelyUnwrapped.requestHeaderBytes : 0)
            key("request_body"); uint(hasUpstream ? s.upstream.unsafelyUnwrapped.requestBodyBytes : 0)
            key("response_headers"); uint(hasUpstream ? s.upstream.unsafelyUnwrapped.responseHeaderBytes : 0)
            key("response_body"); uint(hasUpstream ? s.upstream.unsafelyUnwrapped.responseBodyBytes : 0)
            if s.upgrade != nil {
                key("client_to_upstream"); uint(s.tunnelBytesClientToUpstream ?? 0)
                key("upstream_to_client"); uint(s.tunnelBytesUpstreamToClient ?? 0)
            }
        }
        endObject()
    }

    private mutating func appendCache(_ cache: CacheSummary) {
        beginObject()
        key("status"); string(cache.status)
        if let age = cache.age { key("age"); int(age) }
        if let ttl = cache.ttl { key("ttl"); int(ttl) }
        key("stored"); bool(cache.stored)
        endObject()
    }

    private mutating func appendShaping(_ shaping: ShapingSummary) {
        beginObject()
        key("rule"); string(shaping.rule)
        if !shaping.profile.isEmpty { key("profile"); string(shaping.profile) }
        key("latency_ms"); milliseconds(shaping.latencyMilliseconds)
        key("download_kbps"); milliseconds(shaping.downloadKbps)
        key("upload_kbps"); milliseconds(shaping.uploadKbps)
        if !shaping.faults.isEmpty {
            key("faults")
            beginArray()
            for fault in shaping.faults { element(); string(fault) }
            endArray()
        }
        endObject()
    }

    private mutating func appendMessages(_ m: MessagesSummary) {
        beginObject()
        key("protocol"); string(m.protocolName)
        key("count"); int(m.count)
        let directions: [(StaticString, MessagesSummary.Direction)] = [("client_to_upstream", m.clientToUpstream),
                                                                      ("upstream_to_client", m.upstreamToClient)]
        for (name, direction) in directions {
            key(name); beginObject()
            key("count"); int(direction.count)
            key("bytes"); uint(direction.bytes)
            endObject()
        }
        if let first = m.firstMilliseconds { key("first_ms"); milliseconds(first) }
        if let last = m.lastMilliseconds { key("last_ms"); milliseconds(last) }
        if let firstEvent = m.firstEventMilliseconds { key("first_event_ms"); milliseconds(firstEvent) }
        if let gaps = m.gaps {
            key("gaps_ms"); beginObject()
            key("p50"); milliseconds(gaps.p50)
            key("p99"); milliseconds(gaps.p99)
            key("max"); milliseconds(gaps.max)
            endObject()
        }
        if let code = m.closeCode { key("close_code"); int(code) }
        if let reason = m.closeReason, !reason.isEmpty { key("close_reason"); string(reason) }
        if let by = m.closedBy { key("closed_by"); string(by) }
        if m.deflate { key("deflate"); bool(true) }
        key("decoding"); string(m.decoding)
        if let status = m.grpcStatus { key("grpc_status"); int(status) }
        if let message = m.grpcMessage, !message.isEmpty { key("grpc_message"); string(message) }
        endObject()
    }

    private mutating func appendCapture(_ capture: CaptureSummary) {
        beginObject()
        if let request = capture.request { key("request"); string(request) }
        if let response = capture.response { key("response"); string(response) }
        if let messages = capture.messages { key("messages"); string(messages) }
        key("truncated"); bool(capture.truncated)
        if let error = capture.error { key("error"); string(error) }
        endObject()
    }

    /// `{version, cipher, sni, alpn, resumed, trust: {…}}` of an upstream TLS connection.
    private mutating func appendTLS(_ tls: UpstreamTLSDetails) {
        beginObject()
        key("version"); string(tls.version)
        key("cipher"); string(tls.cipher)
        if let sni = tls.serverName { key("sni"); string(sni) }
        if let alpn = tls.applicationProtocol { key("alpn"); string(alpn) }
        if let ja4s = tls.ja4s { key("ja4s"); string(ja4s) }
        key("resumed"); bool(tls.resumed)
        if tls.clientCertificateRequested || tls.clientCertificate != nil {
            key("client_certificate")
            if let sent = tls.clientCertificate {
                beginObject()
                key("subject"); string(sent.subject)
                key("sha256"); string(sent.sha256)
                endObject()
            } else {
                null()  // asked for, none configured for the host
            }
        }
        key("trust")
        beginObject()
        appendTrustFields(tls.trust)
        endObject()
        endObject()
    }

    /// The fields a trust decision shares between the summary and `task.didEvaluateServerTrust`.
    mutating func appendTrustFields(_ decision: TrustDecision) {
        key("rule"); string(decision.rule)
        key("evaluator"); string(decision.evaluator)
        if let profile = decision.profile { key("profile"); string(profile) }
        key("result"); string(decision.outcome.rawValue)
        if let reason = decision.reason { key("reason"); string(reason) }
        if let message = decision.message { key("message"); string(message) }
        key("presented_pins")
        beginArray()
        for pin in decision.presentedPins { element(); string(pin) }
        endArray()
    }

    // MARK: - Event records

    /// One verbose event line: `{"v":1,"ts":…,"event":"<name>","id":…,"task":…,"conn":…, …payload}`.
    mutating func appendEventRecord(_ event: LookoutEvent, options: LogRecordOptions) {
        let c = event.context
        beginObject()
        key("v"); int(logRecordVersion)
        key("ts"); timestamp(unixMicroseconds: c.time.unixMicroseconds)
        key("event"); string(event.name)
        if let id = c.requestID { key("id"); uint(id) }
        if let task = c.taskID { key("task"); uint(task) }
        key("conn"); uint(c.connectionID)
        recordOptions = options
        event.encodeFields(to: &self)
        endObject()
        endLine()
    }

    // MARK: - Pieces

    mutating func appendError(_ error: ProxyError) {
        beginObject()
        key("code"); string(error.code)
        key("message"); string(error.message)
        if case .cancelledByOperator(let operatorAddress) = error { key("cancelled_by"); string(operatorAddress) }
        if case .abortedByOperator(let operatorAddress) = error { key("aborted_by"); string(operatorAddress) }
        endObject()
    }

    /// `{"transactions":[…],"redirects":N,"total_ms":…}`; `total_ms` is -1 while the task has no end.
    mutating func appendTaskMetrics(_ metrics: TaskMetrics) {
        beginObject()
        key("transactions"); appendTransactions(metrics.transactions, options: recordOptions)
        key("redirects"); int(metrics.redirectCount)
        key("total_ms"); milliseconds(metrics.taskEnd.map { $0.milliseconds(since: metrics.taskStart) } ?? -1)
        endObject()
    }

    /// `[…]` of attempts, in order.
    mutating func appendTransactions(_ transactions: [TransactionMetrics], options: LogRecordOptions) {
        beginArray()
        for transaction in transactions {
            element()
            appendTransaction(transaction, options: options)
        }
        endArray()
    }

    /// One attempt: `{url, status | error, address, protocol, reused, timings_ms, bytes}`.
    mutating func appendTransaction(_ t: TransactionMetrics, options: LogRecordOptions) {
        beginObject()
        if let url = t.url { key("url"); string(redactingURL(url, options: options)) }
        if let code = t.errorCode { key("error"); string(code) }
        if let address = t.remoteAddress { key("address"); string(address) }
        if let local = t.localAddress { key("local_address"); string(local) }
        key("protocol"); string(t.networkProtocolName)
        key("reused"); bool(t.isReusedConnection)
        if let id = t.upstreamConnectionID { key("upstream_conn"); uint(id) }
        if let stream = t.upstreamStreamID { key("stream_id"); int(Int(stream)) }
        if let status = t.statusCode { key("status"); int(status) }
        if let tls = t.tlsBox { key("tls"); appendTLS(tls.value) }
        let phases = t.phases
        key("timings_ms")
        beginObject()
        key("dns"); milliseconds(phases.dns)
        key("connect"); milliseconds(phases.connect)
        key("tls"); milliseconds(phases.tls)
        key("send"); milliseconds(phases.send)
        key("wait"); milliseconds(phases.wait)
        key("receive"); milliseconds(phases.receive)
        key("total"); milliseconds(t.responseEnd.map { $0.milliseconds(since: t.fetchStart) } ?? -1)
        endObject()
        key("bytes")
        beginObject()
        key("request_headers"); uint(t.requestHeaderBytes)
        key("request_body"); uint(t.requestBodyBytes)
        key("response_headers"); uint(t.responseHeaderBytes)
        key("response_body"); uint(t.responseBodyBytes)
        endObject()
        endObject()
    }

    /// A header map keyed by lowercased field name, in first-seen order; repeated fields are joined
    /// with ", ". Secret fields are written as `"[redacted]"` unless `revealSecrets`.
    mutating func appendHeaders(_ fields: HTTPFields, options: LogRecordOptions) {
        var names: [String] = []
        var values: [String] = []
        names.reserveCapacity(fields.count)
        values.reserveCapacity(fields.count)
        for field in fields {
            let name = field.name.canonicalName
            if let index = names.firstIndex(of: name) {
                values[index] += ", "
                values[index] += field.value
            } else {
                names.append(name)
                values.append(field.value)
            }
        }
        beginObject()
        for (name, value) in zip(names, values) {
            key(dynamic: name)
            if !options.revealSecrets && isSecretHeader(name) {
                string(redactedMarker)
            } else {
                string(value)
            }
        }
        endObject()
    }
}

/// What secret values are replaced with.
let redactedMarker: StaticString = "[redacted]"

/// Authorization, Proxy-Authorization, Cookie, Set-Cookie (lowercased names).
@inline(__always) func isSecretHeader(_ canonicalName: String) -> Bool {
    switch canonicalName {
    case "authorization", "proxy-authorization", "cookie", "set-cookie": return true
    default: return false
    }
}

/// Replaces the password of a URL's userinfo: `http://user:pass@host/` -> `http://user:[redacted]@host/`.
/// Works on absolute URLs (`scheme://…`), network-path references (`//…`) and bare authorities
/// (`user:pass@host:port`). Returns `url` unchanged when it has no password or secrets are revealed.
func redactingURL(_ url: String, options: LogRecordOptions) -> String {
    if options.revealSecrets { return url }
    return redactingURLPassword(url)
}

func redactingURLPassword(_ url: String) -> String {
    let hasAt = url.utf8.withContiguousStorageIfAvailable {
        guard let start = $0.baseAddress else { return false }
        return memchr(start, Int32(UInt8(ascii: "@")), $0.count) != nil
    } ?? url.utf8.contains(UInt8(ascii: "@"))
    guard hasAt else { return url }
    let bytes = Array(url.utf8)
    // Where the authority starts.
    var start = 0
    if let schemeEnd = schemeSeparator(in: bytes) {
        start = schemeEnd
    } else if bytes.count >= 2 && bytes[0] == UInt8(ascii: "/") && bytes[1] == UInt8(ascii: "/") {
        start = 2
    }
    var end = start
    while end < bytes.count {
        let b = bytes[end]
        if b == UInt8(ascii: "/") || b == UInt8(ascii: "?") || b == UInt8(ascii: "#") { break }
        end += 1
    }
    guard let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")),
          let colon = bytes[start..<at].firstIndex(of: UInt8(ascii: ":")),
          colon + 1 < at
    else { return url }
    var result: [UInt8] = []
    result.reserveCapacity(bytes.count + 10)
    result.append(contentsOf: bytes[..<(colon + 1)])
    redactedMarker.withUTF8Buffer { result.append(contentsOf: $0) }
    result.append(contentsOf: bytes[at...])
    return String(decoding: result, as: UTF8.self)
}

/// The index just after `scheme://` when `bytes` starts with an RFC 3986 scheme followed by `://`.
private func schemeSeparator(in bytes: [UInt8]) -> Int? {
    guard let first = bytes.first, isAlpha(first) else { return nil }
    var i = 1
    while i < bytes.count {
        let b = bytes[i]
        if b == UInt8(ascii: ":") {
            if i + 2 < bytes.count && bytes[i + 1] == UInt8(ascii: "/") && bytes[i + 2] == UInt8(ascii: "/") {
                return i + 3
            }
            return nil
        }
        if !(isAlpha(b) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
             || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")) {
            return nil
        }
        i += 1
    }
    return nil
}

@inline(__always) private func isAlpha(_ b: UInt8) -> Bool {
    (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
}

// MARK: - Event payloads

/// Event kinds write their payload fields straight into the record being built.
extension JSONBuffer: EventFieldWriter {
    mutating func field(_ key: StaticString, _ value: String) { self.key(key); string(value) }
    mutating func field(_ key: StaticString, url: String) { self.key(key); string(redactingURL(url, options: recordOptions)) }
    mutating func field(_ key: StaticString, _ value: Int) { self.key(key); int(value) }
    mutating func field(_ key: StaticString, _ value: UInt64) { self.key(key); uint(value) }
    mutating func field(_ key: StaticString, _ value: Bool) { self.key(key); bool(value) }
    mutating func field(_ key: StaticString, milliseconds value: Double) { self.key(key); milliseconds(value) }
    mutating func field(_ key: StaticString, number value: Double) { self.key(key); milliseconds(value) }
    mutating func field(_ key: StaticString, _ values: [String]) {
        self.key(key)
        beginArray()
        for value in values { element(); string(value) }
        endArray()
    }
    mutating func field(_ key: StaticString, headers: HTTPFields) { self.key(key); appendHeaders(headers, options: recordOptions) }
    mutating func field(_ key: StaticString, _ error: ProxyError) { self.key(key); appendError(error) }
    mutating func field(_ key: StaticString, _ metrics: TaskMetrics) { self.key(key); appendTaskMetrics(metrics) }
    mutating func trustFields(_ decision: TrustDecision) { appendTrustFields(decision) }
}
