import HTTPTypes
import LookoutAdmin
@testable import LookoutModel
@testable import LookoutMetrics
import LookoutTLS
import Prometheus
import Testing

/// The series a monitor and an endpoint sharing a registry export, read back from the text format.
@Suite struct MetricsMonitorTests {
    private let start = Instant(nanoseconds: 1_000_000_000)

    private func at(_ milliseconds: Double) -> Instant {
        Instant(nanoseconds: start.nanoseconds + UInt64(milliseconds * 1_000_000))
    }

    /// A finished plain-HTTP GET over a new connection: dns 1 ms, connect 2 ms, send 0.5, wait 10, receive 3.
    private func summary(kind: ExchangeSummary.Kind = .http, method: String = "GET",
                         url: String = "http://api.example.com/x", status: Int? = 200) -> ExchangeSummary {
        var summary = ExchangeSummary(requestID: 1, connectionID: 1, clientAddress: "127.0.0.1:5000", kind: kind,
                                      method: method, url: url, httpVersion: "HTTP/1.1", start: start)
        summary.status = status
        var t = TransactionMetrics(fetchStart: start)
        t.domainLookupStart = at(0); t.domainLookupEnd = at(1)
        t.connectStart = at(1); t.connectEnd = at(3)
        t.requestStart = at(3); t.requestEnd = at(3.5)
        t.responseStart = at(13.5); t.responseEnd = at(16.5)
        t.requestHeaderBytes = 100; t.requestBodyBytes = 20
        t.responseHeaderBytes = 200; t.responseBodyBytes = 1000
        summary.upstream = t
        summary.attempts = 1
        summary.end = at(20)
        return summary
    }

    private func reused(_ transaction: TransactionMetrics) -> TransactionMetrics {
        var t = transaction
        t.domainLookupStart = nil; t.domainLookupEnd = nil
        t.connectStart = nil; t.connectEnd = nil
        t.isReusedConnection = true
        return t
    }

    private func scrape(_ events: [LookoutEvent], settings: MetricsSettings = MetricsSettings(),
                        statistics: SessionStatistics = SessionStatistics()) throws -> Exposition {
        let registry = MetricsRegistry()
        let monitor = MetricsMonitor(registry: registry, settings: settings)
        let endpoint = MetricsEndpoint(registry: registry, version: "9.9.9")
        monitor.queue.sync { events.forEach(monitor.receive) }
        let answer = try #require(endpoint.answer(request(statistics: statistics)))
        #expect(answer.status == 200)
        #expect(answer.contentType == "text/plain; version=0.0.4; charset=utf-8")
        return Exposition(String(decoding: answer.body, as: UTF8.self))
    }

    private func request(method: HTTPRequest.Method = .get, path: String = "/metrics",
                         statistics: SessionStatistics = SessionStatistics()) -> AdminRequest {
        AdminRequest(method: method, path: path, query: nil, headerFields: HTTPFields(), statistics: statistics)
    }

    private func finished(_ summary: ExchangeSummary) -> LookoutEvent {
        LookoutEvent(EventContext(connectionID: 1, requestID: 1), RequestDidFinish(summary: summary))
    }

    @Test func countsExchangesByKindMethodStatusClassAndCode() throws {
        var failed = summary(status: 502)
        failed.error = .upstreamFailed(reason: .connectFailed("refused"))
        let page = try scrape([finished(summary()), finished(summary()), finished(failed),
                               finished(summary(method: "BREW", status: nil)),
                               finished(summary(kind: .admin, url: "http://127.0.0.1:8080/metrics"))])
        #expect(page.value("lookout_exchanges_total", ["kind": "http", "method": "GET", "status_class": "2xx", "code": ""]) == 2)
        #expect(page.value("lookout_exchanges_total",
                           ["kind": "http", "method": "GET", "status_class": "5xx", "code": "upstream_connect_failed"]) == 1)
        #expect(page.value("lookout_exchanges_total", ["kind": "http", "method": "OTHER", "status_class": "none", "code": ""]) == 1)
        #expect(page.value("lookout_exchanges_total", ["kind": "admin", "method": "GET", "status_class": "2xx", "code": ""]) == 1)
        #expect(page.series("lookout_exchanges_total").allSatisfy { $0.labels["host"] == nil })
    }

    @Test func phasesAreHistogramsInSecondsWithHARMeanings() throws {
        var retried = summary()
        var second = reused(retried.upstream!)
        second.statusCode = 200
        retried.transactions = [retried.upstream!, second]
        retried.upstream = second
        retried.attempts = 2
        let page = try scrape([finished(summary()), finished(retried)])
        // Every attempt's phases count; a phase that did not happen (reused: dns, connect) does not.
        #expect(page.value("lookout_exchange_phase_seconds_count", ["kind": "http", "phase": "dns"]) == 2)
        #expect(page.value("lookout_exchange_phase_seconds_count", ["kind": "http", "phase": "wait"]) == 3)
        #expect(page.value("lookout_exchange_phase_seconds_count", ["kind": "http", "phase": "tls"]) == nil)
        #expect(page.value("lookout_exchange_phase_seconds_count", ["kind": "http", "phase": "total"]) == 2)
        #expect(abs((page.value("lookout_exchange_phase_seconds_sum", ["kind": "http", "phase": "wait"]) ?? 0) - 0.030) < 1e-9)
        #expect(abs((page.value("lookout_exchange_phase_seconds_sum", ["kind": "http", "phase": "connect"]) ?? 0) - 0.004) < 1e-9)
        // Cumulative buckets: wait (10 ms) is above 5 ms and within 10 ms.
        #expect(page.value("lookout_exchange_phase_seconds_bucket", ["kind": "http", "phase": "wait", "le": "0.005"]) == 0)
        #expect(page.value("lookout_exchange_phase_seconds_bucket", ["kind": "http", "phase": "wait", "le": "0.01"]) == 3)
        #expect(page.value("lookout_exchange_phase_seconds_bucket", ["kind": "http", "phase": "wait", "le": "+Inf"]) == 3)
        #expect(page.value("lookout_upstream_requests_total", ["connection": "new"]) == 2)
        #expect(page.value("lookout_upstream_requests_total", ["connection": "reused"]) == 1)
        #expect(page.value("lookout_retries_total", [:]) == 1)
        #expect(page.value("lookout_redirects_total", [:]) == 0)
        #expect(page.value("lookout_request_bytes_total", ["kind": "http"]) == 360)
        #expect(page.value("lookout_response_bytes_total", ["kind": "http"]) == 3600)
    }

    @Test func adminExchangesHaveNoPhases() throws {
        let page = try scrape([finished(summary(kind: .admin, url: "http://127.0.0.1:8080/"))])
        #expect(page.series("lookout_exchange_phase_seconds_count").isEmpty)
        #expect(page.value("lookout_request_bytes_total", ["kind": "admin"]) == nil)
    }

    @Test func hostLabelsOnlyForListedHosts() throws {
        let settings = MetricsSettings(hostLabels: [try HostPattern("api.example.com"), try HostPattern("*.cdn.example.net")])
        let page = try scrape([finished(summary()), finished(summary(url: "https://img.cdn.example.net:8443/a.png")),
                               finished(summary(url: "http://elsewhere.test/")),
                               finished(summary(kind: .tunnel, url: "API.example.com:443"))], settings: settings)
        #expect(page.value("lookout_exchanges_total",
                           ["kind": "http", "method": "GET", "status_class": "2xx", "code": "", "host": "api.example.com"]) == 1)
        #expect(page.value("lookout_exchanges_total",
                           ["kind": "http", "method": "GET", "status_class": "2xx", "code": "", "host": "*.cdn.example.net"]) == 1)
        #expect(page.value("lookout_exchanges_total",
                           ["kind": "http", "method": "GET", "status_class": "2xx", "code": "", "host": "other"]) == 1)
        #expect(page.value("lookout_exchanges_total",
                           ["kind": "tunnel", "method": "GET", "status_class": "2xx", "code": "", "host": "api.example.com"]) == 1)
        #expect(page.value("lookout_exchange_phase_seconds_count", ["kind": "http", "phase": "total", "host": "other"]) == 1)
        // The label set stays bounded: three host values however many hosts were seen.
        #expect(Set(page.series("lookout_exchanges_total").compactMap { $0.labels["host"] }).count == 3)
    }

    @Test func trustEvaluationsCountHandshakesNotReusedConnections() throws {
        func tls(_ outcome: TrustDecision.Outcome, reason: String?) -> UpstreamTLSDetails {
            UpstreamTLSDetails(version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", serverName: "api.example.com",
                               applicationProtocol: "http/1.1", resumed: false,
                               trust: TrustDecision(host: "api.example.com", rule: "api", evaluator: "public-keys",
                                                    outcome: outcome, reason: reason, presentedPins: [], enforced: true))
        }
        var passed = summary(url: "https://api.example.com/x")
        passed.upstream!.tls = tls(.passed, reason: nil)
        var again = passed
        again.upstream = reused(passed.upstream!)
        var refused = summary(url: "https://api.example.com/x", status: 502)
        refused.upstream!.tls = tls(.failed, reason: "pin_mismatch")
        refused.error = .serverTrustEvaluationFailed(reason: TrustEvaluationError(reason: .pinMismatch, message: "no pin matched", evaluator: "public-keys"))
        let page = try scrape([finished(passed), finished(again), finished(refused)])
        #expect(page.value("lookout_trust_evaluations_total", ["rule": "api", "result": "passed", "reason": ""]) == 1)
        #expect(page.value("lookout_trust_evaluations_total", ["rule": "api", "result": "failed", "reason": "pin_mismatch"]) == 1)
    }

    /// Scrapes taken while exchanges are being counted on the monitor's queue each show whole
    /// exchanges: as many trust decisions and new connections as exchanges, never one ahead.
    @Test func aScrapeNeverSeesHalfAnExchange() throws {
        var handshake = summary(url: "https://api.example.com/x")
        handshake.upstream!.tls = UpstreamTLSDetails(
            version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", serverName: "api.example.com", applicationProtocol: "http/1.1",
            resumed: false, trust: TrustDecision(host: "api.example.com", rule: "default", evaluator: "default",
                                                 outcome: .passed, reason: nil, presentedPins: [], enforced: true))
        let registry = MetricsRegistry()
        let monitor = MetricsMonitor(registry: registry)
        let endpoint = MetricsEndpoint(registry: registry, version: "9.9.9")
        let exchanges = 20_000
        let event = finished(handshake)
        for _ in 0..<exchanges { monitor.queue.async { monitor.receive(event) } }
        var scrapes = 0, torn = 0
        var counted = 0.0
        while counted < Double(exchanges) {
            let page = Exposition(String(decoding: try #require(endpoint.answer(request())).body, as: UTF8.self))
            counted = page.value("lookout_exchanges_total", ["kind": "http", "method": "GET", "status_class": "2xx", "code": ""]) ?? 0
            let trusted = page.value("lookout_trust_evaluations_total", ["rule": "default", "result": "passed", "reason": ""]) ?? 0
            let handshakes = page.value("lookout_upstream_requests_total", ["connection": "new"]) ?? 0
            if trusted != counted || handshakes != counted { torn += 1 }
            scrapes += 1
        }
        #expect(torn == 0, "\(torn) of \(scrapes) scrapes showed part of an exchange")
        #expect(scrapes > 1)
    }

    @Test func tunnelsRedirectsCacheAndRejections() throws {
        var tunnel = summary(kind: .tunnel, method: "CONNECT", url: "api.example.com:443")
        tunnel.tunnelBytesClientToUpstream = 517
        tunnel.tunnelBytesUpstreamToClient = 4096
        var redirected = summary()
        redirected.attempts = 3
        redirected.redirects = 2
        var hit = summary()
        hit.upstream = nil
        hit.attempts = 0
        hit.cache = CacheSummary(status: "hit", age: 3, ttl: 57)
        var miss = summary()
        miss.cache = CacheSummary(status: "miss", stored: true)
        var simulated = summary()
        simulated.simulated = ("/r/a.jsonl", 3)
        var unmatched = summary()
        unmatched.error = .simulationMiss(detail: "no request")
        let rejected = LookoutEvent(EventContext(connectionID: 9),
                                    ConnectionWasRejected(client: "127.0.0.1:1", error: .sessionUnavailable(reason: .tooManyConnections(limit: 1))))
        let page = try scrape([finished(tunnel), finished(redirected), finished(hit), finished(miss), finished(simulated),
                               finished(unmatched), rejected, rejected])
        #expect(page.value("lookout_tunnel_bytes_total", ["kind": "tunnel", "direction": "client_to_upstream"]) == 517)
        #expect(page.value("lookout_tunnel_bytes_total", ["kind": "tunnel", "direction": "upstream_to_client"]) == 4096)
        #expect(page.value("lookout_redirects_total", [:]) == 2)
        #expect(page.value("lookout_retries_total", [:]) == 0)
        #expect(page.value("lookout_cache_lookups_total", ["status": "hit"]) == 1)
        #expect(page.value("lookout_cache_lookups_total", ["status": "miss"]) == 1)
        #expect(page.value("lookout_connections_rejected_total", ["code": "too_many_connections"]) == 2)
        #expect(page.value("lookout_simulated_total", ["result": "answered"]) == 1)
        #expect(page.value("lookout_simulated_total", ["result": "missed"]) == 1)
    }

    @Test func gaugesComeFromTheSessionAtEachScrape() throws {
        let registry = MetricsRegistry()
        let endpoint = MetricsEndpoint(registry: registry, version: "9.9.9")
        var statistics = SessionStatistics(openClientConnections: 3, openUpstreamConnections: 2, exchangesInFlight: 1,
                                           droppedEvents: 5, reachability: .reachable(.ethernet),
                                           cacheObjects: 10, cacheBytes: 2048, startTimeSeconds: 1_700_000_000.5)
        var page = Exposition(String(decoding: try #require(endpoint.answer(request(statistics: statistics))).body, as: UTF8.self))
        #expect(page.value("lookout_client_connections_open", [:]) == 3)
        #expect(page.value("lookout_upstream_connections_open", [:]) == 2)
        #expect(page.value("lookout_exchanges_in_flight", [:]) == 1)
        #expect(page.value("lookout_monitor_events_dropped_total", [:]) == 5)
        #expect(page.value("lookout_reachability_status", ["status": "reachable_via_ethernet"]) == 1)
        #expect(page.value("lookout_reachability_status", ["status": "not_reachable"]) == 0)
        #expect(page.value("lookout_cache_objects", [:]) == 10)
        #expect(page.value("lookout_cache_bytes", [:]) == 2048)
        #expect(page.value("lookout_start_time_seconds", [:]) == 1_700_000_000.5)
        #expect(page.value("lookout_build_info", ["version": "9.9.9"]) == 1)

        // The dropped count is a counter: later scrapes add only what was dropped since.
        statistics.droppedEvents = 7
        statistics.openClientConnections = 0
        statistics.reachability = .notReachable
        page = Exposition(String(decoding: try #require(endpoint.answer(request(statistics: statistics))).body, as: UTF8.self))
        #expect(page.value("lookout_monitor_events_dropped_total", [:]) == 7)
        #expect(page.value("lookout_client_connections_open", [:]) == 0)
        #expect(page.value("lookout_reachability_status", ["status": "not_reachable"]) == 1)
        #expect(page.value("lookout_reachability_status", ["status": "reachable_via_ethernet"]) == 0)
    }

    @Test func offeredOnlyAtItsPathForGetAndHead() throws {
        let endpoint = MetricsEndpoint(registry: MetricsRegistry(), version: "9.9.9")
        #expect(endpoint.answer(request(path: "/metric")) == nil)
        #expect(endpoint.answer(request(path: "/metrics/")) == nil)
        #expect(endpoint.answer(request(method: .head))?.status == 200)
        let post = try #require(endpoint.answer(request(method: .post)))
        #expect(post.status == 405)
    }
}

/// The text exposition parsed into series: `name{labels} value` lines, comments skipped.
struct Exposition {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    let samples: [Sample]

    init(_ text: String) {
        samples = text.split(separator: "\n").compactMap { line -> Sample? in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "),
                  let value = Double(line[line.index(after: space)...]) else { return nil }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else {
                return Sample(name: String(series), labels: [:], value: value)
            }
            var labels: [String: String] = [:]
            var rest = series[series.index(after: brace)..<series.index(before: series.endIndex)]
            while let equals = rest.firstIndex(of: "=") {
                let key = String(rest[..<equals])
                var index = rest.index(equals, offsetBy: 2)
                var labelValue = ""
                while rest[index] != "\"" {
                    if rest[index] == "\\" { index = rest.index(after: index) }
                    labelValue.append(rest[index])
                    index = rest.index(after: index)
                }
                labels[key] = labelValue
                rest = rest[rest.index(after: index)...]
                if rest.first == "," { rest = rest.dropFirst() }
            }
            return Sample(name: String(series[..<brace]), labels: labels, value: value)
        }
    }

    func series(_ name: String) -> [Sample] { samples.filter { $0.name == name } }

    /// The value of the one series of `name` with exactly these labels.
    func value(_ name: String, _ labels: [String: String]) -> Double? {
        let matches = samples.filter { $0.name == name && $0.labels == labels }
        return matches.count == 1 ? matches[0].value : nil
    }
}
