#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import Lookout

/// How records are rendered.
struct LogRecordOptions: Sendable {
    /// Write secret header values and URL passwords as they are.
    var revealSecrets: Bool
    /// Add `request_headers` / `response_headers` to summary records.
    var includeHeaders: Bool
}

/// The record format version written as `"v"`.
let logRecordVersion = 1

// MARK: - Summary record

extension JSONBuffer {
    /// One `"event":"exchange"` line (EVENTS.md, "The summary record").
    mutating func appendSummaryRecord(_ s: ExchangeSummary, options: LogRecordOptions) {
        beginObject()
        key("v"); int(logRecordVersion)
        key("ts"); timestamp(unixMicroseconds: s.end.unixMicroseconds)
        key("event"); string("exchange" as StaticString)
        key("id"); uint(s.requestID)
        key("conn"); uint(s.connectionID)
        key("client"); string(s.clientAddress)
        key("kind"); string(s.kind.rawValue)
        key("method"); string(s.method)
        key("url"); string(redactingURL(s.url, options: options))
        key("http_version"); string(s.httpVersion)
        if let status = s.status { key("status"); int(status) }
        if let upstream = s.upstream {
            key("upstream")
            beginObject()
            if let address = upstream.remoteAddress { key("address"); string(address) }
            key("protocol"); string(upstream.networkProtocolName)
            key("reused"); bool(upstream.isReusedConnection)
            if let tls = upstream.tls { key("tls"); appendTLS(tls) }
            endObject()
        }
        key("timings_ms")
        beginObject()
        let phases = s.upstream?.phases ?? (dns: -1, connect: -1, tls: -1, send: -1, wait: -1, receive: -1)
        key("dns"); milliseconds(phases.dns)
        key("connect"); milliseconds(phases.connect)
        key("tls"); milliseconds(phases.tls)
        key("send"); milliseconds(phases.send)
        key("wait"); milliseconds(phases.wait)
        key("receive"); milliseconds(phases.receive)
        key("total"); milliseconds(s.totalMilliseconds)
        endObject()
        key("bytes")
        beginObject()
        if s.kind == .tunnel {
            key("client_to_upstream"); uint(s.tunnelBytesClientToUpstream ?? 0)
            key("upstream_to_client"); uint(s.tunnelBytesUpstreamToClient ?? 0)
        } else {
            key("request_headers"); uint(s.upstream?.requestHeaderBytes ?? 0)
            key("request_body"); uint(s.upstream?.requestBodyBytes ?? 0)
            key("response_headers"); uint(s.upstream?.responseHeaderBytes ?? 0)
            key("response_body"); uint(s.upstream?.responseBodyBytes ?? 0)
            if s.upgrade != nil {
                key("client_to_upstream"); uint(s.tunnelBytesClientToUpstream ?? 0)
                key("upstream_to_client"); uint(s.tunnelBytesUpstreamToClient ?? 0)
            }
        }
        endObject()
        if let upgrade = s.upgrade {
            key("upgrade"); string(upgrade)
        }
        if s.kind == .tunnel || s.upgrade != nil {
            key("duration_ms"); milliseconds(s.totalMilliseconds)
        }
        key("attempts"); int(s.attempts)
        key("redirects"); int(s.redirects)
        if let cache = s.cache { key("cache"); string(cache) }
        if let error = s.error { key("error"); appendError(error) }
        if options.includeHeaders {
            if let fields = s.requestHeaders { key("request_headers"); appendHeaders(fields, options: options) }
            if let fields = s.responseHeaders { key("response_headers"); appendHeaders(fields, options: options) }
        }
        endObject()
        endLine()
    }

    /// `{version, cipher, sni, alpn, resumed, trust: {…}}` of an upstream TLS connection.
    private mutating func appendTLS(_ tls: UpstreamTLSDetails) {
        beginObject()
        key("version"); string(tls.version)
        key("cipher"); string(tls.cipher)
        if let sni = tls.serverName { key("sni"); string(sni) }
        if let alpn = tls.applicationProtocol { key("alpn"); string(alpn) }
        key("resumed"); bool(tls.resumed)
        key("trust")
        beginObject()
        appendTrustFields(tls.trust)
        endObject()
        endObject()
    }

    /// The fields a trust decision shares between the summary and `task.didEvaluateServerTrust`.
    private mutating func appendTrustFields(_ decision: TrustDecision) {
        key("rule"); string(decision.rule)
        key("evaluator"); string(decision.evaluator)
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
        appendPayload(event, options: options)
        endObject()
        endLine()
    }

    private mutating func appendPayload(_ event: LookoutEvent, options: LogRecordOptions) {
        switch event {
        // connection.*
        case let .connectionDidOpen(_, client, listener):
            key("client"); string(client)
            key("listener"); string(listener)
        case let .connectionDidClose(_, reason, requests, received, sent):
            key("reason"); string(reason)
            key("requests"); int(requests)
            key("bytes_received"); uint(received)
            key("bytes_sent"); uint(sent)
        case let .connectionWasRejected(_, client, error):
            key("client"); string(client)
            key("error"); appendError(error)
        case let .clientTLSHandshakeDidComplete(_, serverName, version, cipher, alpn):
            if let serverName { key("sni"); string(serverName) }
            key("version"); string(version)
            key("cipher"); string(cipher)
            if let alpn { key("alpn"); string(alpn) }
        case let .clientTLSHandshakeDidFail(_, serverName, error):
            if let serverName { key("sni"); string(serverName) }
            key("error"); appendError(error)
        // request.*
        case let .didCreateInitialRequest(_, request):
            key("method"); string(request.method)
            key("url"); string(redactingURL(request.url, options: options))
            key("http_version"); string(request.httpVersion)
            key("client"); string(request.client)
            key("headers"); appendHeaders(request.headerFields, options: options)
        case let .didFailToCreateRequest(_, error):
            key("error"); appendError(error)
        case .didAuthorize:
            break
        case let .didRejectClient(_, error):
            key("error"); appendError(error)
        case let .didAdaptRequest(_, target, fields):
            key("upstream_target"); string(redactingURL(target, options: options))
            key("headers"); appendHeaders(fields, options: options)
        case let .didLookUpCache(_, result):
            key("result"); string(result)
        case let .requestIsRetrying(_, attempt, reason):
            key("attempt"); int(attempt)
            key("reason"); string(reason)
        case let .requestDidFinish(_, summary):
            if let status = summary.status { key("status"); int(status) }
            key("ms"); milliseconds(summary.totalMilliseconds)
            if let error = summary.error { key("error"); appendError(error) }
        // task.*
        case let .didCreateTask(_, origin, attempt):
            key("origin"); string(origin)
            key("attempt"); int(attempt)
        case let .didResolve(_, host, addresses, ms, cached):
            key("host"); string(host)
            key("addresses")
            beginArray()
            for address in addresses { element(); string(address) }
            endArray()
            key("ms"); milliseconds(ms)
            key("cached"); bool(cached)
        case let .didConnect(_, address, ms):
            key("address"); string(address)
            key("ms"); milliseconds(ms)
        case let .didReuseConnection(_, address, upstreamConnectionID):
            key("address"); string(address)
            key("upstream_conn"); uint(upstreamConnectionID)
        case let .didReceiveChallenge(_, host, rule, evaluator):
            key("host"); string(host)
            key("rule"); string(rule)
            key("evaluator"); string(evaluator)
        case let .didEvaluateServerTrust(_, decision):
            key("host"); string(decision.host)
            appendTrustFields(decision)
            key("enforced"); bool(decision.enforced)
        case let .didSendBodyData(_, sent, total):
            key("bytes_sent"); int(sent)
            key("total_bytes_sent"); uint(total)
        case let .didReceiveResponse(_, status, reason, fields):
            key("status"); int(status)
            key("reason"); string(reason)
            key("headers"); appendHeaders(fields, options: options)
        case let .willPerformRedirect(_, status, location, decision):
            key("status"); int(status)
            key("location"); string(redactingURL(location, options: options))
            key("decision"); string(decision)
        case let .didReceiveData(_, bytes, total):
            key("bytes"); int(bytes)
            key("total_bytes"); uint(total)
        case .didSuspendTask, .didResumeTask:
            break
        case let .willCacheResponse(_, decision):
            key("decision"); string(decision)
        case let .didGatherMetrics(_, metrics):
            key("metrics"); appendTaskMetrics(metrics)
        case let .didCompleteTask(_, error):
            if let error { key("error"); appendError(error) }
        // tunnel.*
        case let .tunnelDidOpen(_, target, address):
            key("target"); string(target)
            key("address"); string(address)
        case let .tunnelDidClose(_, up, down, ms, error):
            key("client_to_upstream"); uint(up)
            key("upstream_to_client"); uint(down)
            key("ms"); milliseconds(ms)
            if let error { key("error"); appendError(error) }
        // session.*
        case let .sessionDidStart(_, listeners):
            key("listeners")
            beginArray()
            for listener in listeners { element(); string(listener) }
            endArray()
        case let .sessionWillInvalidate(_, inFlight):
            key("in_flight"); int(inFlight)
        case let .sessionDidBecomeInvalid(_, dropped):
            key("dropped_events"); uint(dropped)
        }
    }

    // MARK: - Pieces

    mutating func appendError(_ error: ProxyError) {
        beginObject()
        key("code"); string(error.code)
        key("message"); string(error.message)
        endObject()
    }

    /// `{"transactions":[…],"redirects":N,"total_ms":…}`; `total_ms` is -1 while the task has no end.
    mutating func appendTaskMetrics(_ metrics: TaskMetrics) {
        beginObject()
        key("transactions")
        beginArray()
        for transaction in metrics.transactions {
            element()
            appendTransaction(transaction)
        }
        endArray()
        key("redirects"); int(metrics.redirectCount)
        key("total_ms"); milliseconds(metrics.taskEnd.map { $0.milliseconds(since: metrics.taskStart) } ?? -1)
        endObject()
    }

    mutating func appendTransaction(_ t: TransactionMetrics) {
        beginObject()
        if let address = t.remoteAddress { key("address"); string(address) }
        if let local = t.localAddress { key("local_address"); string(local) }
        key("protocol"); string(t.networkProtocolName)
        key("reused"); bool(t.isReusedConnection)
        if let id = t.upstreamConnectionID { key("upstream_conn"); uint(id) }
        if let status = t.statusCode { key("status"); int(status) }
        if let tls = t.tls { key("tls"); appendTLS(tls) }
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
