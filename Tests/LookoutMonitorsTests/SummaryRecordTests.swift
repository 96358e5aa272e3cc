import Foundation
import HTTPTypes
@testable import LookoutModel
import Testing
@testable import LookoutMonitors

@Suite struct SummaryRecordTests {
    @Test func httpExchangeWithUpstreamAndMetrics() throws {
        let (monitor, path) = try makeMonitor()
        let summary = httpSummary()
        let lines = try deliver([LookoutEvent(EventContext(time: summary.end, connectionID: 3, requestID: 7), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        #expect(lines == [
            #"{"v":1,"ts":"2031-03-04T05:06:07.890123Z","event":"exchange","id":7,"conn":3,"client":"127.0.0.1:51234","#
            + #""kind":"http","method":"GET","url":"http://127.0.0.1:9000/x","http_version":"HTTP/1.1","status":200,"#
            + #""upstream":{"address":"127.0.0.1:9000","protocol":"http/1.1","reused":false},"#
            + #""timings_ms":{"blocked":0,"dns":0.05,"connect":0.12,"tls":-1,"send":0.01,"wait":0.9,"receive":0.2,"total":1.4},"#
            + #""bytes":{"request_headers":120,"request_body":0,"response_headers":150,"response_body":1024},"#
            + #""attempts":1,"redirects":0}"#,
        ])
        #expect(monitor.recordsWritten == 1)
        #expect(monitor.writeErrors == 0)
    }

    @Test func reusedConnectionWithCacheAndRetries() throws {
        let (monitor, path) = try makeMonitor()
        var summary = httpSummary()
        summary.upstream!.domainLookupStart = nil
        summary.upstream!.domainLookupEnd = nil
        summary.upstream!.connectStart = nil
        summary.upstream!.connectEnd = nil
        summary.upstream!.isReusedConnection = true
        summary.upstream!.requestBodyBytes = 5
        summary.attempts = 2
        summary.redirects = 1
        summary.cache = CacheSummary(status: "revalidated", age: 3, ttl: -2, stored: true)
        let lines = try deliver([LookoutEvent(EventContext(connectionID: 3, requestID: 7), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        #expect(lines.count == 1)
        #expect(lines.first?.contains(#""upstream":{"address":"127.0.0.1:9000","protocol":"http/1.1","reused":true},"#
            + #""timings_ms":{"blocked":0,"dns":-1,"connect":-1,"tls":-1,"send":0.01,"wait":0.9,"receive":0.2,"total":1.4},"#
            + #""bytes":{"request_headers":120,"request_body":5,"response_headers":150,"response_body":1024},"#
            + #""attempts":2,"redirects":1,"#
            + #""cache":{"status":"revalidated","age":3,"ttl":-2,"stored":true}}"#) == true)
    }

    @Test func severalAttemptsListTheirTransactionsAndFinalURL() throws {
        let (monitor, path) = try makeMonitor()
        var summary = httpSummary()
        var first = summary.upstream!
        first.url = "http://u:pw@127.0.0.1:9000/x"
        first.statusCode = 503
        var second = summary.upstream!
        second.url = "http://127.0.0.1:9000/y"
        second.isReusedConnection = true
        var failed = TransactionMetrics(fetchStart: summary.start)
        failed.url = "http://127.0.0.1:9001/y"
        failed.errorCode = "upstream_connect_failed"
        summary.transactions = [first, failed, second]
        summary.upstream = second
        summary.attempts = 3
        summary.redirects = 1
        summary.finalURL = "http://u:pw@127.0.0.1:9000/y"
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3, requestID: 7), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        let record = try parseJSON(line)
        #expect(record["attempts"] as? Int == 3)
        #expect(record["redirects"] as? Int == 1)
        #expect(record["final_url"] as? String == "http://u:[redacted]@127.0.0.1:9000/y")
        let transactions = try #require(record["transactions"] as? [[String: Any]])
        #expect(transactions.map { $0["url"] as? String } == ["http://u:[redacted]@127.0.0.1:9000/x", "http://127.0.0.1:9001/y",
                                                             "http://127.0.0.1:9000/y"])
        #expect(transactions.map { $0["status"] as? Int } == [503, nil, 200])
        #expect(transactions.map { $0["error"] as? String } == [nil, "upstream_connect_failed", nil])
        #expect(transactions.map { $0["reused"] as? Bool } == [false, false, true])
        #expect(transactions.allSatisfy { ($0["timings_ms"] as? [String: Any])?["total"] != nil })
    }

    @Test func oneAttemptWritesNoTransactions() throws {
        let (monitor, path) = try makeMonitor()
        var summary = httpSummary()
        summary.transactions = [summary.upstream!]
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3, requestID: 7), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        let record = try parseJSON(line)
        #expect(record["transactions"] == nil && record["final_url"] == nil)
    }

    @Test func failedExchangeHasErrorAndNoStatus() throws {
        let (monitor, path) = try makeMonitor()
        let end = instant(unixMicros: fixedEndMicros)
        var summary = ExchangeSummary(requestID: 12, connectionID: 4, clientAddress: "127.0.0.1:40000", kind: .http,
                                      method: "POST", url: "http://127.0.0.1:9/upload", httpVersion: "HTTP/1.1",
                                      start: end.subtracting(nanoseconds: 2_500_000))
        summary.end = end
        summary.attempts = 1
        summary.error = .clientFailed(reason: .closed("in the middle of a request"))
        let lines = try deliver([LookoutEvent(EventContext(connectionID: 4, requestID: 12), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        #expect(lines == [
            #"{"v":1,"ts":"2031-03-04T05:06:07.890123Z","event":"exchange","id":12,"conn":4,"client":"127.0.0.1:40000","#
            + #""kind":"http","method":"POST","url":"http://127.0.0.1:9/upload","http_version":"HTTP/1.1","#
            + #""timings_ms":{"blocked":-1,"dns":-1,"connect":-1,"tls":-1,"send":-1,"wait":-1,"receive":-1,"total":2.5},"#
            + #""bytes":{"request_headers":0,"request_body":0,"response_headers":0,"response_body":0},"#
            + #""attempts":1,"redirects":0,"#
            + #""error":{"code":"client_closed","message":"client closed the connection: in the middle of a request"}}"#,
        ])
    }

    @Test func upstreamFailureWithStatus() throws {
        let (monitor, path) = try makeMonitor()
        var summary = httpSummary()
        summary.status = 502
        summary.upstream = nil
        summary.error = .upstreamFailed(reason: .connectFailed("connection refused"))
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        #expect(line.contains(#""status":502,"timings_ms""#))
        #expect(!line.contains("upstream\":"))
        #expect(line.hasSuffix(#""error":{"code":"upstream_connect_failed","message":"cannot connect upstream: connection refused"}}"#))
    }

    @Test func tunnel() throws {
        let (monitor, path) = try makeMonitor()
        let end = instant(unixMicros: fixedEndMicros)
        let start = end.subtracting(nanoseconds: 1_234_567_890)
        var summary = ExchangeSummary(requestID: 9, connectionID: 5, clientAddress: "[::1]:50000", kind: .tunnel,
                                      method: "CONNECT", url: "example.test:443", httpVersion: "HTTP/1.1", start: start)
        summary.end = end
        summary.status = 200
        var t = TransactionMetrics(fetchStart: start)
        t.connectStart = start
        t.connectEnd = start.adding(nanoseconds: 300_000)
        t.remoteAddress = "127.0.0.1:8443"
        t.networkProtocolName = "tcp"
        summary.upstream = t
        summary.attempts = 1
        summary.tunnelBytesClientToUpstream = 517
        summary.tunnelBytesUpstreamToClient = 4096
        let lines = try deliver([LookoutEvent(EventContext(connectionID: 5, requestID: 9), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        #expect(lines == [
            #"{"v":1,"ts":"2031-03-04T05:06:07.890123Z","event":"exchange","id":9,"conn":5,"client":"[::1]:50000","#
            + #""kind":"tunnel","method":"CONNECT","url":"example.test:443","http_version":"HTTP/1.1","status":200,"#
            + #""upstream":{"address":"127.0.0.1:8443","protocol":"tcp","reused":false},"#
            + #""timings_ms":{"blocked":0,"dns":-1,"connect":0.3,"tls":-1,"send":-1,"wait":-1,"receive":-1,"total":1234.568},"#
            + #""bytes":{"client_to_upstream":517,"upstream_to_client":4096},"duration_ms":1234.568,"#
            + #""attempts":1,"redirects":0}"#,
        ])
    }

    @Test func exchangeThatSwitchedProtocols() throws {
        let (monitor, path) = try makeMonitor()
        let end = instant(unixMicros: fixedEndMicros)
        let start = end.subtracting(nanoseconds: 2_000_000_000)
        var summary = ExchangeSummary(requestID: 3, connectionID: 2, clientAddress: "127.0.0.1:40000", kind: .http,
                                      method: "GET", url: "http://example.test/chat", httpVersion: "HTTP/1.1", start: start)
        summary.end = end
        summary.status = 101
        var t = TransactionMetrics(fetchStart: start)
        t.requestHeaderBytes = 120
        t.responseHeaderBytes = 90
        summary.upstream = t
        summary.attempts = 1
        summary.upgrade = "websocket"
        summary.tunnelBytesClientToUpstream = 7
        summary.tunnelBytesUpstreamToClient = 11
        let lines = try deliver([LookoutEvent(EventContext(connectionID: 2, requestID: 3), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.contains(#""status":101,"#))
        #expect(line.contains(#""bytes":{"request_headers":120,"request_body":0,"response_headers":90,"response_body":0,"#
                              + #""client_to_upstream":7,"upstream_to_client":11},"upgrade":"websocket","duration_ms":2000,"#))
    }

    @Test func mappedAndShaped() throws {
        let (monitor, path) = try makeMonitor()
        let end = instant(unixMicros: fixedEndMicros)
        var summary = ExchangeSummary(requestID: 5, connectionID: 2, clientAddress: "127.0.0.1:1", kind: .intercepted,
                                      method: "GET", url: "http://127.0.0.1:3000/x", httpVersion: "HTTP/1.1",
                                      start: end.subtracting(nanoseconds: 1_000_000))
        summary.end = end
        summary.status = 503
        summary.mappedFrom = "https://user:pw@api.test/v2/x"
        summary.shaping = ShapingSummary(rule: "api.test", profile: "slow-3g", latencyMilliseconds: 2000.25,
                                         downloadKbps: 400, uploadKbps: 400)
        summary.shaping?.faults = ["status"]
        summary.error = .injectedFault(reason: .status(code: 503, rule: "api.test"))
        let lines = try deliver([LookoutEvent(EventContext(connectionID: 2, requestID: 5), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        let line = try #require(lines.first)
        #expect(line.contains(#""error":{"code":"injected_fault","message":"status 503 injected by the shaping rule for api.test (faults.status); the origin was not asked"},"#
                              + #""mapped_from":"https://user:[redacted]@api.test/v2/x","#
                              + #""shaping":{"rule":"api.test","profile":"slow-3g","latency_ms":2000.25,"download_kbps":400,"upload_kbps":400,"faults":["status"]}"#))
    }

    @Test func heldModifiedAndResent() throws {
        let (monitor, path) = try makeMonitor()
        let end = instant(unixMicros: fixedEndMicros)
        var summary = ExchangeSummary(requestID: 9, connectionID: 0, clientAddress: "127.0.0.1:7", kind: .http,
                                      method: "POST", url: "http://a.test/x", httpVersion: "HTTP/1.1",
                                      start: end.subtracting(nanoseconds: 1_000_000))
        summary.end = end
        summary.status = 502
        summary.heldMilliseconds = 1500.5
        summary.modifiedBy = ["breakpoint:1", "operator:127.0.0.1:7"]
        summary.resentFrom = 4
        summary.resentBy = "127.0.0.1:7"
        summary.error = .abortedByOperator(operatorAddress: "127.0.0.1:7")
        let lines = try deliver([LookoutEvent(EventContext(connectionID: 0, requestID: 9), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        let line = try #require(lines.first)
        #expect(line.contains(#""error":{"code":"aborted_by_operator","message":"aborted by the operator at 127.0.0.1:7 while held at a breakpoint (POST /exchanges/ID/abort)","aborted_by":"127.0.0.1:7"},"#
                              + #""held_ms":1500.5,"modified_by":["breakpoint:1","operator:127.0.0.1:7"],"resent_from":4,"resent_by":"127.0.0.1:7"}"#), "\(line)")
    }

    @Test func admin() throws {
        let (monitor, path) = try makeMonitor()
        let end = instant(unixMicros: fixedEndMicros)
        var summary = ExchangeSummary(requestID: 1, connectionID: 1, clientAddress: "127.0.0.1:1", kind: .admin,
                                      method: "GET", url: "/healthz", httpVersion: "HTTP/1.1",
                                      start: end.subtracting(nanoseconds: 42_000))
        summary.end = end
        summary.status = 200
        let lines = try deliver([LookoutEvent(EventContext(connectionID: 1, requestID: 1), RequestDidFinish(summary: summary))],
                                to: monitor, path: path)
        #expect(lines == [
            #"{"v":1,"ts":"2031-03-04T05:06:07.890123Z","event":"exchange","id":1,"conn":1,"client":"127.0.0.1:1","#
            + #""kind":"admin","method":"GET","url":"/healthz","http_version":"HTTP/1.1","status":200,"#
            + #""timings_ms":{"blocked":-1,"dns":-1,"connect":-1,"tls":-1,"send":-1,"wait":-1,"receive":-1,"total":0.042},"#
            + #""bytes":{"request_headers":0,"request_body":0,"response_headers":0,"response_body":0},"#
            + #""attempts":0,"redirects":0}"#,
        ])
    }

    @Test func timestampOfARealInstantIsRFC3339WithMicroseconds() throws {
        let (monitor, path) = try makeMonitor()
        var summary = httpSummary()
        summary.end = .now()
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        let ts = try #require(try parseJSON(line)["ts"] as? String)
        #expect(ts.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z/) != nil)
        // Within a minute of Foundation's idea of now.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(formatter.date(from: ts))
        #expect(abs(date.timeIntervalSinceNow) < 60)
    }

    @Test func headersInSummaryAreRedactedByDefault() throws {
        let (monitor, path) = try makeMonitor(includeHeaders: true)
        var summary = httpSummary()
        summary.requestHeaders = fields([
            ("Host", "127.0.0.1:9000"), ("Authorization", "Bearer abc"), ("Cookie", "a=1"), ("cookie", "b=2"),
            ("Proxy-Authorization", "Basic dXNlcjpwYXNz"), ("Accept", "text/html"), ("accept", "*/*"),
        ])
        summary.responseHeaders = fields([("Set-Cookie", "s=1; Path=/"), ("Set-Cookie", "t=2"), ("Content-Length", "1024")])
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        #expect(line.hasSuffix(#""attempts":1,"redirects":0,"#
            + #""request_headers":{"host":"127.0.0.1:9000","authorization":"[redacted]","cookie":"[redacted]","#
            + #""proxy-authorization":"[redacted]","accept":"text/html, */*"},"#
            + #""response_headers":{"set-cookie":"[redacted]","content-length":"1024"}}"#))
        #expect(!line.contains("abc"))
        #expect(!line.contains("a=1"))
    }

    @Test func headersInSummaryRevealedOnRequest() throws {
        let (monitor, path) = try makeMonitor(revealSecrets: true, includeHeaders: true)
        var summary = httpSummary()
        summary.requestHeaders = fields([("Authorization", "Bearer abc"), ("Cookie", "a=1"), ("Cookie", "b=2")])
        summary.responseHeaders = fields([("Set-Cookie", "s=1")])
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        #expect(line.hasSuffix(#""request_headers":{"authorization":"Bearer abc","cookie":"a=1, b=2"},"#
            + #""response_headers":{"set-cookie":"s=1"}}"#))
    }

    @Test func headersOmittedUnlessIncludeHeaders() throws {
        let (monitor, path) = try makeMonitor(revealSecrets: true)
        var summary = httpSummary()
        summary.requestHeaders = fields([("Authorization", "Bearer abc")])
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        #expect(!line.contains("request_headers\":{"))
        #expect(!line.contains("Bearer"))
    }

    @Test func urlPasswordsAreRedacted() throws {
        let (monitor, path) = try makeMonitor()
        var summary = httpSummary()
        summary.url = "http://user:s3cret@127.0.0.1:9000/x?q=a@b"
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        #expect(line.contains(#""url":"http://user:[redacted]@127.0.0.1:9000/x?q=a@b","#))
        #expect(!line.contains("s3cret"))

        let (revealing, revealingPath) = try makeMonitor(revealSecrets: true)
        let revealed = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                                to: revealing, path: revealingPath).first)
        #expect(revealed.contains(#""url":"http://user:s3cret@127.0.0.1:9000/x?q=a@b","#))
    }

    @Test func escapingInRecords() throws {
        let (monitor, path) = try makeMonitor()
        var summary = httpSummary()
        let nasty = "a\"b\\c\nd\re\tf\u{01}g\u{1F}h\u{7F}i é 日本 🚀 /"
        summary.method = nasty
        let line = try #require(try deliver([LookoutEvent(EventContext(connectionID: 3), RequestDidFinish(summary: summary))],
                                            to: monitor, path: path).first)
        #expect(line.contains(#""method":"a\"b\\c\nd\re\tf\u0001g\u001fh\u007fi é 日本 🚀 /","#))
        #expect(try parseJSON(line)["method"] as? String == nasty)
    }
}
