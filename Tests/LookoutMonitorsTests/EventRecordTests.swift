import Foundation
import HTTPTypes
@testable import LookoutModel
import LookoutMonitors
import Testing

@Suite struct EventRecordTests {
    /// One exchange's lifecycle on connection 3: request 7, upstream task 9.
    private func exchangeEvents() -> [LookoutEvent] {
        let summary = httpSummary()
        let t0 = summary.start
        let conn = EventContext(time: t0, connectionID: 3)
        let request = EventContext(time: t0, connectionID: 3, requestID: 7)
        let task = EventContext(time: t0.adding(nanoseconds: 10_000), connectionID: 3, requestID: 7, taskID: 9)
        var metrics = TaskMetrics(taskStart: t0)
        metrics.transactions = [summary.upstream!]
        metrics.taskEnd = summary.end
        return [
            LookoutEvent(conn, ConnectionDidOpen(client: "127.0.0.1:51234", listener: "127.0.0.1:8080")),
            LookoutEvent(request, RequestDidCreateInitialRequest(
                method: "GET", url: "http://u:pw@127.0.0.1:9000/x", httpVersion: "HTTP/1.1",
                headerFields: fields([("Host", "127.0.0.1:9000"), ("Proxy-Authorization", "Basic eDp5")]),
                client: "127.0.0.1:51234")),
            LookoutEvent(request, RequestDidAdaptRequest(upstreamTarget: "/x", headerFields: fields([("Host", "127.0.0.1:9000"), ("Via", "1.1 lookout")]))),
            LookoutEvent(task, TaskDidCreate(origin: "http://127.0.0.1:9000", attempt: 1)),
            LookoutEvent(task, TaskDidResolve(host: "127.0.0.1", addresses: ["127.0.0.1"], milliseconds: 0.05, cached: false)),
            LookoutEvent(task, TaskDidConnect(address: "127.0.0.1:9000", milliseconds: 0.12)),
            LookoutEvent(task, TaskDidSendBodyData(bytesSent: 0, totalBytesSent: 0)),
            LookoutEvent(task, TaskDidReceiveResponse(status: 200, reasonPhrase: "OK", headerFields: fields([("Content-Length", "1024"), ("Set-Cookie", "sid=1")]))),
            LookoutEvent(task, TaskDidReceiveData(bytes: 1024, totalBytes: 1024)),
            LookoutEvent(task, TaskDidGatherMetrics(metrics: metrics)),
            LookoutEvent(task, TaskDidComplete(error: nil)),
            LookoutEvent(EventContext(time: summary.end, connectionID: 3, requestID: 7), RequestDidFinish(summary: summary)),
            LookoutEvent(conn, ConnectionDidClose(reason: "client closed", requests: 1, bytesReceived: 80, bytesSent: 1200)),
        ]
    }

    @Test func verboseLifecycleOfOneExchange() throws {
        let (monitor, path) = try makeMonitor(verbose: true)
        let lines = try deliver(exchangeEvents(), to: monitor, path: path)
        let records = try lines.map(parseJSON)
        #expect(records.map { $0["event"] as? String } == [
            "connection.didOpen", "request.didCreateInitialRequest", "request.didAdaptRequest", "task.didCreateTask",
            "task.didResolve", "task.didConnect", "task.didSendBodyData", "task.didReceiveResponse",
            "task.didReceiveData", "task.didGatherMetrics", "task.didComplete", "request.didFinish", "exchange",
            "connection.didClose",
        ])
        #expect(monitor.recordsWritten == 14)
        for record in records {
            #expect(record["v"] as? Int == 1)
            #expect(record["conn"] as? Int == 3)
            #expect((record["ts"] as? String)?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/) != nil)
        }
        // ids: none on connection events, request id from request.* on, task id only on task.*
        #expect(records.map { $0["id"] as? Int } == [nil, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, nil])
        #expect(records.map { $0["task"] as? Int } == [nil, nil, nil, 9, 9, 9, 9, 9, 9, 9, 9, nil, nil, nil])

        let common: Set<String> = ["v", "ts", "event", "id", "task", "conn"]
        let payloadKeys = records.map { Set($0.keys).subtracting(common) }
        #expect(payloadKeys == [
            ["client", "listener"],
            ["method", "url", "http_version", "client", "headers"],
            ["upstream_target", "headers"],
            ["origin", "attempt"],
            ["host", "addresses", "ms", "cached"],
            ["address", "ms"],
            ["bytes_sent", "total_bytes_sent"],
            ["status", "reason", "headers"],
            ["bytes", "total_bytes"],
            ["metrics"],
            [],
            ["status", "ms"],
            ["client", "kind", "method", "url", "http_version", "status", "upstream", "timings_ms", "bytes",
             "attempts", "redirects"],
            ["reason", "requests", "bytes_received", "bytes_sent"],
        ])

        // Exact text of a few.
        #expect(lines[4] == #"{"v":1,"ts":"2031-03-04T05:06:07.888733Z","event":"task.didResolve","id":7,"task":9,"conn":3,"#
            + #""host":"127.0.0.1","addresses":["127.0.0.1"],"ms":0.05,"cached":false}"#)
        #expect(lines[1].hasSuffix(#""method":"GET","url":"http://u:[redacted]@127.0.0.1:9000/x","http_version":"HTTP/1.1","#
            + #""client":"127.0.0.1:51234","headers":{"host":"127.0.0.1:9000","proxy-authorization":"[redacted]"}}"#))
        #expect(lines[7].hasSuffix(#""status":200,"reason":"OK","headers":{"content-length":"1024","set-cookie":"[redacted]"}}"#))
        #expect(lines[9].hasSuffix(#""metrics":{"transactions":[{"address":"127.0.0.1:9000","protocol":"http/1.1","#
            + #""reused":false,"status":200,"#
            + #""timings_ms":{"dns":0.05,"connect":0.12,"tls":-1,"send":0.01,"wait":0.9,"receive":0.2,"total":1.28},"#
            + #""bytes":{"request_headers":120,"request_body":0,"response_headers":150,"response_body":1024}}],"#
            + #""redirects":0,"total_ms":1.4}}"#))
        #expect(lines[10].hasSuffix(#""event":"task.didComplete","id":7,"task":9,"conn":3}"#))
        #expect(lines[11].hasSuffix(#""event":"request.didFinish","id":7,"conn":3,"status":200,"ms":1.4}"#))
    }

    @Test func verboseRevealsSecretsOnRequest() throws {
        let (monitor, path) = try makeMonitor(verbose: true, revealSecrets: true)
        let lines = try deliver(exchangeEvents(), to: monitor, path: path)
        #expect(lines[1].hasSuffix(#""url":"http://u:pw@127.0.0.1:9000/x","http_version":"HTTP/1.1","#
            + #""client":"127.0.0.1:51234","headers":{"host":"127.0.0.1:9000","proxy-authorization":"Basic eDp5"}}"#))
        #expect(lines[7].contains(#""set-cookie":"sid=1""#))
    }

    @Test func defaultModeWritesOnlySummariesAndSession() throws {
        let (monitor, path) = try makeMonitor()
        let session = EventContext(connectionID: 0)
        let events = [LookoutEvent(session, SessionDidStart(listeners: ["127.0.0.1:8080", "[::1]:8080"]))] + exchangeEvents() + [
            LookoutEvent(session, SessionWillInvalidate(inFlight: 2)),
            LookoutEvent(session, SessionDidBecomeInvalid(droppedEvents: 5)),
        ]
        let lines = try deliver(events, to: monitor, path: path)
        let records = try lines.map(parseJSON)
        #expect(records.map { $0["event"] as? String } ==
                ["session.didStart", "exchange", "session.willInvalidate", "session.didBecomeInvalid"])
        #expect(lines[0].hasSuffix(#""event":"session.didStart","conn":0,"listeners":["127.0.0.1:8080","[::1]:8080"]}"#))
        #expect(lines[2].hasSuffix(#""event":"session.willInvalidate","conn":0,"in_flight":2}"#))
        #expect(lines[3].hasSuffix(#""event":"session.didBecomeInvalid","conn":0,"dropped_events":5}"#))
    }

    /// Each event with the payload keys its record carries: the connection, request, task, tunnel,
    /// message and trust events.
    private static func coreCases(_ c: EventContext, _ error: ProxyError) -> [(LookoutEvent, Set<String>)] {
        [
            (LookoutEvent(c, ConnectionWasRejected(client: "127.0.0.1:1", error: .sessionUnavailable(reason: .tooManyConnections(limit: 4)))),
             ["client", "error"]),
            (LookoutEvent(c, RequestDidFailToCreateRequest(error: .requestRejected(reason: .requestLineTooLong))), ["error"]),
            (LookoutEvent(c, RequestDidAuthorize()), []),
            (LookoutEvent(c, RequestDidRejectClient(error: .requestRejected(reason: .connectPortNotAllowed(port: 25)))), ["error"]),
            (LookoutEvent(c, RequestDidLookUpCache(result: "miss")), ["result"]),
            (LookoutEvent(c, RequestIsRetrying(attempt: 2, delay: 0, reason: "upstream_closed")), ["attempt", "delay_ms", "reason"]),
            (LookoutEvent(c, TaskDidReuseConnection(address: "127.0.0.1:9000", upstreamConnectionID: 11)), ["address", "upstream_conn"]),
            (LookoutEvent(c, TaskWillPerformRedirect(from: "http://h/a", to: "http://a:b@h/", status: 301,
                                                     decision: "follow", reason: "rule")),
             ["from", "to", "status", "decision", "reason"]),
            (LookoutEvent(c, TaskDidSuspend()), []),
            (LookoutEvent(c, TaskDidResume()), []),
            (LookoutEvent(c, TaskWillCacheResponse(stored: true)), ["stored"]),
            (LookoutEvent(c, TaskDidComplete(error: error)), ["error"]),
            (LookoutEvent(c, TunnelDidOpen(target: "h:443", address: "127.0.0.1:443")), ["target", "address"]),
            (LookoutEvent(c, TunnelDidClose(clientToUpstream: 1, upstreamToClient: 2, milliseconds: 3.5, error: nil)),
             ["client_to_upstream", "upstream_to_client", "ms"]),
            (LookoutEvent(c, TunnelDidClose(clientToUpstream: 1, upstreamToClient: 2, milliseconds: .nan, error: error)),
             ["client_to_upstream", "upstream_to_client", "ms", "error"]),
            (LookoutEvent(c, RequestDidResume(offset: 65536, validator: "\"v1\"", attempt: 2, reason: "upstream_closed")),
             ["offset", "validator", "attempt", "reason"]),
            (LookoutEvent(c, WebSocketDidPassMessage(from: "client", opcode: "text", wireBytes: 11, bytes: 5, frames: 1,
                                                     compressed: false, milliseconds: 2,
                                                     preview: MessagePreview(text: "hello", truncated: false))),
             ["from", "opcode", "wire_bytes", "bytes", "ms", "preview"]),
            (LookoutEvent(c, WebSocketDidPassMessage(from: "upstream", opcode: "close", wireBytes: 8, bytes: nil, frames: 1,
                                                     compressed: true, milliseconds: 3, preview: nil, closeCode: 1001,
                                                     closeReason: "away")),
             ["from", "opcode", "wire_bytes", "compressed", "ms", "close_code", "close_reason"]),
            (LookoutEvent(c, TLSClientRejectedInterception(serverName: "a.test", ja4: "t13d", alert: "unknown ca", learned: true)),
             ["sni", "ja4", "alert", "learned"]),
            (LookoutEvent(c, AuditDidFind(finding: AuditFinding(id: "cookie-no-secure", severity: .medium, cwe: 614,
                                                                 evidence: "Set-Cookie: sid=[redacted]"))),
             ["finding", "severity", "cwe", "evidence"]),
            (LookoutEvent(c, StreamDidPassEvent(from: "upstream", format: "sse", index: 1, milliseconds: 4, bytes: 20,
                                                event: "add", id: "7",
                                                preview: MessagePreview(base64: "AA==", truncated: true))),
             ["from", "format", "index", "ms", "bytes", "event_name", "event_id", "preview_base64", "preview_truncated"]),
            (LookoutEvent(c, ConnectionDidCompleteClientTLSHandshake(serverName: "a.test", version: "TLSv1.3",
                                                                     cipher: "TLS_AES_128_GCM_SHA256", applicationProtocol: "http/1.1")),
             ["sni", "version", "cipher", "alpn"]),
            (LookoutEvent(c, ConnectionDidFailClientTLSHandshake(serverName: nil, error: .clientFailed(reason: .tlsHandshakeFailed("x")))),
             ["error"]),
            (LookoutEvent(c, TaskDidReceiveChallenge(host: "a.test", rule: "api", evaluator: "default")),
             ["host", "rule", "evaluator"]),
            (LookoutEvent(c, TaskDidEvaluateServerTrust(decision: TrustDecision(
                host: "a.test", rule: "api", evaluator: "public-keys", outcome: .failed, reason: "pin_mismatch",
                message: "no pin matched", presentedPins: ["sha256/x"], enforced: true))),
             ["host", "rule", "evaluator", "result", "reason", "message", "presented_pins", "enforced"]),
            (LookoutEvent(c, RequestDidLookUpCache(result: "stale", reason: "request_no_cache", age: 5, ttl: -1)),
             ["result", "reason", "age", "ttl"]),
            (LookoutEvent(c, TaskWillCacheResponse(stored: false, reason: "private", rule: "**.a.test")), ["stored", "reason", "rule"]),
        ]
    }

    /// The same for HTTP/2 endings, rewrites, breakpoints, hooks, shaping, faults and the cache.
    private static func stageCases(_ c: EventContext) -> [(LookoutEvent, Set<String>)] {
        [
            (LookoutEvent(c, ConnectionDidEndHTTP2(code: "ENHANCE_YOUR_CALM", reason: "rapid reset")), ["code", "reason"]),
            (LookoutEvent(c, UpstreamDidReceiveGoAway(origin: "https://a.test:443", upstreamConnectionID: 5, code: "NO_ERROR",
                                                      lastStreamID: 7, openStreams: 2, debugData: "")),
             ["origin", "upstream_conn", "code", "last_stream_id", "open_streams"]),
            (LookoutEvent(c, UpstreamDidEndHTTP2(origin: "https://a.test:443", upstreamConnectionID: 5,
                                                 reason: "no PING ACK within 10000 ms", openStreams: 0)),
             ["origin", "upstream_conn", "reason", "open_streams"]),
            (LookoutEvent(c, RequestDidMapRemote(from: "https://a.test/v2/", to: "http://127.0.0.1:3000/",
                                                 url: "https://a.test/v2/x", mappedURL: "http://127.0.0.1:3000/x",
                                                 preserveHost: false)),
             ["from", "to", "url", "mapped_url", "preserve_host"]),
            (LookoutEvent(c, RequestDidMapLocal(from: "https://a.test/c.json", file: "/f/c.json", status: 200,
                                                contentType: "application/json", bytes: 2)),
             ["from", "file", "status", "content_type", "bytes"]),
            (LookoutEvent(c, ExchangeDidPause(phase: "request", rule: "1: method:POST", bodyBytes: 12, bodyEditable: true,
                                              timeout: 300, onTimeout: "continue")),
             ["phase", "rule", "body_bytes", "body_editable", "timeout_s", "on_timeout"]),
            (LookoutEvent(c, ExchangeDidNotPause(phase: "request", rule: "1: method:POST", reason: "max_held")),
             ["phase", "rule", "reason"]),
            (LookoutEvent(c, ExchangeDidResume(phase: "response", rule: "2: status:5xx", by: "127.0.0.1:5", action: "continue",
                                               changes: ["status"], heldMilliseconds: 12.5)),
             ["phase", "rule", "by", "action", "changes", "held_ms"]),
            (LookoutEvent(c, HookDidRun(hook: "sign", phase: "request", milliseconds: 2, action: "modify",
                                        changes: ["header:x-sig"], error: nil)),
             ["hook", "phase", "ms", "action", "changes"]),
            (LookoutEvent(c, HookDidRestart(hook: "sign", reason: "exited with status 1", backoffMilliseconds: 200)),
             ["hook", "reason", "backoff_ms"]),
            (LookoutEvent(c, RequestDidShape(shaping: ShapingSummary(rule: "a.test", profile: "fast-3g", latencyMilliseconds: 562.5,
                                                                      downloadKbps: 1440, uploadKbps: 675))),
             ["rule", "profile", "latency_ms", "download_kbps", "upload_kbps"]),
            (LookoutEvent(c, TunnelDidShape(shaping: ShapingSummary(rule: "a.test", profile: "", latencyMilliseconds: 0,
                                                                     downloadKbps: 800, uploadKbps: 0))),
             ["rule", "latency_ms", "download_kbps", "upload_kbps"]),
            (LookoutEvent(c, RequestDidInjectFault(rule: "a.test", fault: .status(503))), ["rule", "fault", "status"]),
            (LookoutEvent(c, RequestDidInjectFault(rule: "a.test", fault: .stall(milliseconds: 500))), ["rule", "fault", "stall_ms"]),
            (LookoutEvent(c, CacheDidEvict(url: "http://u:p@a/x", object: "ab", bytes: 10, reason: "size_limit")),
             ["url", "object", "bytes", "reason"]),
        ]
    }

    @Test func everyOtherEventHasItsPayload() throws {
        let (monitor, path) = try makeMonitor(verbose: true)
        let c = EventContext(connectionID: 2, requestID: 4, taskID: 6)
        let error = ProxyError.upstreamFailed(reason: .firstByteTimedOut(after: 60))
        let cases = Self.coreCases(c, error) + Self.stageCases(c)
        let lines = try deliver(cases.map(\.0), to: monitor, path: path)
        #expect(lines.count == cases.count)
        for ((event, keys), line) in zip(cases, lines) {
            let record = try parseJSON(line)
            #expect(record["event"] as? String == event.name)
            #expect(record["id"] as? Int == 4 && record["task"] as? Int == 6 && record["conn"] as? Int == 2)
            #expect(Set(record.keys).subtracting(["v", "ts", "event", "id", "task", "conn"]) == keys, "\(line)")
        }
        #expect(lines[0].hasSuffix(#""client":"127.0.0.1:1","error":{"code":"too_many_connections","message":"connection limit (4) reached"}}"#))
        #expect(lines[7].contains(#""to":"http://a:[redacted]@h/""#))
        #expect(lines[11].hasSuffix(#""error":{"code":"upstream_first_byte_timeout","message":"upstream sent no response within 60 s"}}"#))
        #expect(lines[14].contains(#""ms":-1,"error""#))
        #expect(lines[lines.count - 1].contains(#""url":"http://u:[redacted]@a/x""#))
        #expect(lines[lines.count - 5].hasSuffix(#""rule":"a.test","profile":"fast-3g","latency_ms":562.5,"download_kbps":1440,"upload_kbps":675}"#))
        #expect(lines[lines.count - 3].hasSuffix(#""rule":"a.test","fault":"status","status":503}"#))
    }

    @Test func interestFollowsVerbosity() throws {
        let (quiet, _) = try makeMonitor()
        let (verbose, _) = try makeMonitor(verbose: true)
        #expect(quiet.interest == .summaries)
        #expect(verbose.interest == .all)
        #expect(CompositeEventMonitor(monitors: [quiet]).wants(.lifecycle) == false)
        #expect(CompositeEventMonitor(monitors: [quiet]).wants(.summaries) == true)
        #expect(CompositeEventMonitor(monitors: [verbose]).wants(.lifecycle) == true)
        let stdout = try JSONLinesLogMonitor(destination: LogDestination(configPath: "-"), verbose: false,
                                             revealSecrets: false, includeHeaders: false)
        #expect(stdout.destination == .standardOutput)
        #expect(stdout.interest == .summaries)
        #expect(LogDestination(configPath: "/var/log/x.jsonl") == .file(path: "/var/log/x.jsonl"))
    }
}
