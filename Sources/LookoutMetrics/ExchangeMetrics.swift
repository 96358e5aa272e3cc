import LookoutAdmin
import Prometheus
import LookoutModel

/// Turns finished exchanges into counters and histograms. The registry's series are made on first
/// use and kept here by label values, so the steady state is a dictionary lookup and an atomic add
/// per series, with no allocation.
final class ExchangeMetrics: @unchecked Sendable {  // the caches are confined to `MetricsMonitor.queue`
    private let registry: PrometheusCollectorRegistry
    private let labels: MetricLabels

    /// Label values as indexes into `MetricLabels`' tables, so a lookup hashes few bytes.
    private struct ExchangeKey: Hashable {
        var kind: ExchangeSummary.Kind
        var method: UInt8
        var statusClass: UInt8
        var code: String
        var host: String?
    }

    /// The `phase` label's values, in HAR's order.
    enum Phase: Int, CaseIterable {
        case dns, connect, tls, send, wait, receive, total

        var label: String {
            switch self {
            case .dns: return "dns"
            case .connect: return "connect"
            case .tls: return "tls"
            case .send: return "send"
            case .wait: return "wait"
            case .receive: return "receive"
            case .total: return "total"
            }
        }
    }

    /// One kind's (and host's) series, each made on first use: a histogram per phase, the byte
    /// counters. Together, so an exchange looks its kind and host up once, not once per family.
    private final class HostSeries {
        var byPhase = [ValueHistogram?](repeating: nil, count: Phase.allCases.count)
        var requestBytes: Counter?
        var responseBytes: Counter?
        var tunnelBytes: (toUpstream: Counter, toClient: Counter)?
    }

    private struct KindHostKey: Hashable {
        var kind: ExchangeSummary.Kind
        var host: String?
    }

    private struct TrustKey: Hashable {
        var rule: String
        var result: String
        var reason: String
    }

    private var exchanges: [ExchangeKey: Counter] = [:]
    private var seriesByKindHost: [KindHostKey: HostSeries] = [:]
    /// The series the previous exchange used: traffic comes in runs to one host, and comparing
    /// the key is cheaper than hashing it (a host name, and for exchanges an error code).
    private var lastSeries: (key: KindHostKey, series: HostSeries)?
    private var lastExchange: (key: ExchangeKey, counter: Counter)?
    private var trust: [TrustKey: Counter] = [:]
    private var cacheLookups: [String: Counter] = [:]
    private var rejections: [String: Counter] = [:]
    private let newConnections: Counter
    private let reusedConnections: Counter
    private let retries: Counter
    private let redirects: Counter
    private let simulatedAnswers: Counter
    private var policyCounters: [String: Counter] = [:]
    private var findingCounters: [String: Counter] = [:]
    /// By protocol: message counters each way, and the first-event and gap histograms.
    private var messageSeries: [String: (toUpstream: Counter, toClient: Counter, firstEvent: ValueHistogram, gap: ValueHistogram)] = [:]
    private let simulationMisses: Counter

    init(registry: PrometheusCollectorRegistry, settings: MetricsSettings) {
        self.registry = registry
        self.labels = MetricLabels(settings: settings)
        newConnections = registry.makeCounter(descriptor: MetricFamilies.upstreamRequests, labels: [("connection", "new")])
        reusedConnections = registry.makeCounter(descriptor: MetricFamilies.upstreamRequests, labels: [("connection", "reused")])
        retries = registry.makeCounter(descriptor: MetricFamilies.retries)
        redirects = registry.makeCounter(descriptor: MetricFamilies.redirects)
        simulatedAnswers = registry.makeCounter(descriptor: MetricFamilies.simulated, labels: [("result", "answered")])
        simulationMisses = registry.makeCounter(descriptor: MetricFamilies.simulated, labels: [("result", "missed")])
    }

    func record(_ summary: borrowing ExchangeSummary) {
        let host = labels.host(of: summary)
        let exchangeKey = ExchangeKey(kind: summary.kind, method: MetricLabels.methodIndex(summary.method),
                                      statusClass: MetricLabels.statusClassIndex(summary.status),
                                      code: summary.error?.code ?? "", host: host)
        // The exchange is counted last; the monitor counts it under `MetricsRegistry`'s lock, so
        // a scrape sees it together with its phases, bytes and trust decision, or none of them.
        defer { counter(exchangeKey).increment() }
        if summary.kind == .admin { return }

        let kindHost = KindHostKey(kind: summary.kind, host: host)
        let kindHostSeries = hostSeries(kindHost)
        var bytes = (sent: UInt64(0), received: UInt64(0))
        if summary.transactions.isEmpty {
            // Unwrapped in place: bound by `if let`, the attempt is copied with its strings.
            if summary.upstream != nil { record(summary.upstream!, kindHostSeries, kindHost, &bytes) }
        } else {
            for transaction in summary.transactions { record(transaction, kindHostSeries, kindHost, &bytes) }
        }
        observe(.total, summary.totalMilliseconds, kindHostSeries, kindHost)

        if bytes.sent > 0 {
            byteCounter(&kindHostSeries.requestBytes, MetricFamilies.requestBytes, kindHost).increment(by: Int64(bytes.sent))
        }
        if bytes.received > 0 {
            byteCounter(&kindHostSeries.responseBytes, MetricFamilies.responseBytes, kindHost)
                .increment(by: Int64(bytes.received))
        }
        if summary.tunnelBytesClientToUpstream != nil || summary.tunnelBytesUpstreamToClient != nil {
            let counters = tunnelCounters(kindHostSeries, kindHost)
            counters.toUpstream.increment(by: Int64(summary.tunnelBytesClientToUpstream ?? 0))
            counters.toClient.increment(by: Int64(summary.tunnelBytesUpstreamToClient ?? 0))
        }
        let retried = summary.attempts - 1 - summary.redirects
        if retried > 0 { retries.increment(by: Int64(retried)) }
        if summary.redirects > 0 { redirects.increment(by: Int64(summary.redirects)) }
        if let cache = summary.cache { cacheCounter(cache.status).increment() }
        if summary.simulated != nil { simulatedAnswers.increment() }
        if case .simulationMiss? = summary.error { simulationMisses.increment() }
        if let messages = summary.messages { record(messages) }
        if let policy = summary.policy {
            // Roles are the config's, decisions and modes two each: the label sets stay bounded.
            let key = "\(policy.role)\u{0}\(policy.decision)\u{0}\(policy.mode)"
            let counter = policyCounters[key] ?? registry.makeCounter(
                descriptor: MetricFamilies.policyDecisions,
                labels: [("role", policy.role), ("decision", policy.decision), ("mode", policy.mode)])
            policyCounters[key] = counter
            counter.increment()
            if policy.wouldDeny {
                let counter = policyCounters["would_deny\u{0}\(policy.role)"] ?? registry.makeCounter(
                    descriptor: MetricFamilies.policyWouldDeny, labels: [("role", policy.role)])
                policyCounters["would_deny\u{0}\(policy.role)"] = counter
                counter.increment()
            }
        }
        for finding in summary.findings {
            let counter = findingCounters[finding.id] ?? registry.makeCounter(
                descriptor: MetricFamilies.findings, labels: [("id", finding.id), ("severity", finding.severity.rawValue)])
            findingCounters[finding.id] = counter
            counter.increment()
        }
    }

    private func record(_ messages: MessagesSummary) {
        let name = messages.protocolName
        let series = messageSeries[name] ?? (
            registry.makeCounter(descriptor: MetricFamilies.messages, labels: [("protocol", name), ("direction", "client_to_upstream")]),
            registry.makeCounter(descriptor: MetricFamilies.messages, labels: [("protocol", name), ("direction", "upstream_to_client")]),
            registry.makeValueHistogram(descriptor: MetricFamilies.firstEventSeconds, labels: [("protocol", name)],
                                        buckets: MetricFamilies.secondsBuckets),
            registry.makeValueHistogram(descriptor: MetricFamilies.gapSeconds, labels: [("protocol", name)],
                                        buckets: MetricFamilies.secondsBuckets))
        messageSeries[name] = series
        if messages.clientToUpstream.count > 0 { series.toUpstream.increment(by: Int64(messages.clientToUpstream.count)) }
        if messages.upstreamToClient.count > 0 { series.toClient.increment(by: Int64(messages.upstreamToClient.count)) }
        if let first = messages.firstEventMilliseconds, name != "websocket" { series.firstEvent.record(first / 1000) }
        for gap in messages.gapSamples { series.gap.record(gap / 1000) }
    }

    /// One upstream attempt: its phases, bytes, connection and trust decision.
    private func record(_ transaction: borrowing TransactionMetrics, _ series: HostSeries, _ key: KindHostKey,
                        _ bytes: inout (sent: UInt64, received: UInt64)) {
        let phases = transaction.phases
        observe(.dns, phases.dns, series, key)
        observe(.connect, phases.connect, series, key)
        observe(.tls, phases.tls, series, key)
        observe(.send, phases.send, series, key)
        observe(.wait, phases.wait, series, key)
        observe(.receive, phases.receive, series, key)
        bytes.sent += transaction.requestHeaderBytes + transaction.requestBodyBytes
        bytes.received += transaction.responseHeaderBytes + transaction.responseBodyBytes
        if transaction.isReusedConnection {
            reusedConnections.increment()
        } else if transaction.connectEnd != nil {
            newConnections.increment()
            // A new TLS connection is a handshake, and every handshake is judged by a trust rule.
            if let tls = transaction.tlsBox { countTrust(tls.value.trust) }
        }
    }

    /// A connection refused before any request (`connection.wasRejected`).
    func recordRejection(_ error: ProxyError) {
        let code = error.code
        if let counter = rejections[code] {
            counter.increment()
            return
        }
        let counter = registry.makeCounter(descriptor: MetricFamilies.connectionsRejected, labels: [("code", code)])
        rejections[code] = counter
        counter.increment()
    }

    // MARK: - Series by label values

    private func counter(_ key: ExchangeKey) -> Counter {
        if let lastExchange, lastExchange.key == key { return lastExchange.counter }
        let counter = exchanges[key] ?? makeCounter(key)
        lastExchange = (key, counter)
        return counter
    }

    private func makeCounter(_ key: ExchangeKey) -> Counter {
        var pairs = [("kind", key.kind.rawValue), ("method", MetricLabels.methods[Int(key.method)]),
                     ("status_class", MetricLabels.statusClasses[Int(key.statusClass)]), ("code", key.code)]
        if let host = key.host { pairs.append(("host", host)) }
        let counter = registry.makeCounter(descriptor: MetricFamilies.exchanges, labels: pairs)
        exchanges[key] = counter
        return counter
    }

    private func hostSeries(_ key: KindHostKey) -> HostSeries {
        if let lastSeries, lastSeries.key == key { return lastSeries.series }
        let found: HostSeries
        if let known = seriesByKindHost[key] {
            found = known
        } else {
            found = HostSeries()
            seriesByKindHost[key] = found
        }
        lastSeries = (key, found)
        return found
    }

    /// Records `milliseconds` in seconds; a negative value is a phase that did not happen.
    private func observe(_ phase: Phase, _ milliseconds: Double, _ series: HostSeries, _ key: KindHostKey) {
        guard milliseconds >= 0 else { return }
        if let histogram = series.byPhase[phase.rawValue] {
            histogram.record(milliseconds / 1000)
            return
        }
        var pairs = [("kind", key.kind.rawValue), ("phase", phase.label)]
        if let host = key.host { pairs.append(("host", host)) }
        let histogram = registry.makeValueHistogram(descriptor: MetricFamilies.phaseSeconds, labels: pairs,
                                                    buckets: MetricFamilies.secondsBuckets)
        series.byPhase[phase.rawValue] = histogram
        histogram.record(milliseconds / 1000)
    }

    /// `family` is built only for a new series: a descriptor is four strings, and this runs for
    /// every exchange.
    private func byteCounter(_ slot: inout Counter?, _ family: @autoclosure () -> MetricNameDescriptor,
                             _ key: KindHostKey) -> Counter {
        if let counter = slot { return counter }
        let counter = registry.makeCounter(descriptor: family(), labels: kindHostPairs(key))
        slot = counter
        return counter
    }

    private func tunnelCounters(_ series: HostSeries, _ key: KindHostKey) -> (toUpstream: Counter, toClient: Counter) {
        if let counters = series.tunnelBytes { return counters }
        let pairs = kindHostPairs(key)
        let counters = (
            toUpstream: registry.makeCounter(descriptor: MetricFamilies.tunnelBytes,
                                             labels: pairs + [("direction", "client_to_upstream")]),
            toClient: registry.makeCounter(descriptor: MetricFamilies.tunnelBytes,
                                           labels: pairs + [("direction", "upstream_to_client")]))
        series.tunnelBytes = counters
        return counters
    }

    private func kindHostPairs(_ key: KindHostKey) -> [(String, String)] {
        var pairs = [("kind", key.kind.rawValue)]
        if let host = key.host { pairs.append(("host", host)) }
        return pairs
    }

    private func countTrust(_ decision: TrustDecision) {
        let key = TrustKey(rule: decision.rule, result: decision.outcome.rawValue, reason: decision.reason ?? "")
        if let counter = trust[key] {
            counter.increment()
            return
        }
        let counter = registry.makeCounter(descriptor: MetricFamilies.trustEvaluations,
                                           labels: [("rule", key.rule), ("result", key.result), ("reason", key.reason)])
        trust[key] = counter
        counter.increment()
    }

    private func cacheCounter(_ status: String) -> Counter {
        if let counter = cacheLookups[status] { return counter }
        let counter = registry.makeCounter(descriptor: MetricFamilies.cacheLookups, labels: [("status", status)])
        cacheLookups[status] = counter
        return counter
    }
}
