import LookoutAdmin
import Prometheus
import LookoutModel
import LookoutSync

/// `GET /metrics` on the admin endpoint: the registry in the Prometheus text exposition format
/// (version 0.0.4), with the session's gauges read at the moment of the scrape.
public final class MetricsEndpoint: AdminEndpoint {
    private let registry: MetricsRegistry
    private let clientConnections: Gauge
    private let upstreamConnections: Gauge
    private let inFlight: Gauge
    private let startTime: Gauge
    private let droppedEvents: Counter
    private let loopSpins: Counter
    private let loopSpinSeconds: Counter
    /// The totals already added to the counters fed from the session's statistics (scrapes may
    /// run on several loops at once).
    private let reported = Guarded(Reported())

    /// The OpenTelemetry exporter's totals (`otel`): `dropped` and `exported`, by signal.
    private let otelTotals: (@Sendable () -> [(kind: String, signal: String, total: UInt64)])?

    private struct Reported {
        var otel: [String: UInt64] = [:]
        var droppedEvents: UInt64 = 0
        var loopSpins = 0
        var loopSpinNanoseconds: Int64 = 0
    }

    /// How much a session total grew since the last scrape reported it, which then follows it;
    /// nil when it did not grow.
    private static func growth<Total: BinaryInteger>(of total: Total, since reported: inout Total) -> Total? {
        guard total > reported else { return nil }
        defer { reported = total }
        return total - reported
    }

    public static let path = "/metrics"
    /// The text format's media type (Prometheus "exposition formats", text-based format).
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public init(registry metricsRegistry: MetricsRegistry, version: String,
                otelTotals: (@Sendable () -> [(kind: String, signal: String, total: UInt64)])? = nil) {
        self.registry = metricsRegistry
        self.otelTotals = otelTotals
        let registry = metricsRegistry.prometheus
        clientConnections = registry.makeGauge(descriptor: MetricFamilies.clientConnections)
        upstreamConnections = registry.makeGauge(descriptor: MetricFamilies.upstreamConnections)
        inFlight = registry.makeGauge(descriptor: MetricFamilies.inFlight)
        startTime = registry.makeGauge(descriptor: MetricFamilies.startTime)
        droppedEvents = registry.makeCounter(descriptor: MetricFamilies.droppedEvents)
        loopSpins = registry.makeCounter(descriptor: MetricFamilies.loopSpins)
        loopSpinSeconds = registry.makeCounter(descriptor: MetricFamilies.loopSpinSeconds)
        registry.makeGauge(descriptor: MetricFamilies.buildInfo, labels: [("version", version)]).set(Int64(1))
    }

    public var statusLine: String? { "metrics: GET \(Self.path) (Prometheus text format)" }

    public func answer(_ request: AdminRequest) -> AdminAnswer? {
        guard request.path == Self.path else { return nil }
        guard request.method == .get || request.method == .head else {
            return AdminAnswer(status: 405, contentType: "text/plain; charset=utf-8",
                               body: Array("\(Self.path) answers GET and HEAD only\n".utf8))
        }
        registry.counting { update(from: request.statistics) }
        return AdminAnswer(contentType: Self.contentType, body: registry.render())
    }

    /// Sets the gauges read from the session; made on first sight for the optional ones.
    private func update(from statistics: SessionStatistics) {
        clientConnections.set(Int64(statistics.openClientConnections))
        upstreamConnections.set(Int64(statistics.openUpstreamConnections))
        inFlight.set(Int64(statistics.exchangesInFlight))
        startTime.set(statistics.startTimeSeconds)
        reported.withLock { reported in
            if let added = Self.growth(of: statistics.droppedEvents, since: &reported.droppedEvents) {
                droppedEvents.increment(by: Int64(added))
            }
            if let added = Self.growth(of: statistics.loopSpins, since: &reported.loopSpins) {
                loopSpins.increment(by: Int64(added))
            }
            if let added = Self.growth(of: statistics.loopSpinNanoseconds, since: &reported.loopSpinNanoseconds) {
                loopSpinSeconds.increment(by: Double(added) / 1e9)
            }
            for (kind, signal, total) in otelTotals?() ?? [] {
                let family = kind == "dropped" ? MetricFamilies.otelDropped : MetricFamilies.otelExported
                let counter = registry.prometheus.makeCounter(descriptor: family, labels: [("signal", signal)])
                if let added = Self.growth(of: total, since: &reported.otel["\(kind).\(signal)", default: 0]) {
                    counter.increment(by: Int64(added))
                }
            }
        }
        if let current = statistics.reachability {
            for status in ReachabilityStatus.all {
                registry.prometheus.makeGauge(descriptor: MetricFamilies.reachability, labels: [("status", status.description)])
                    .set(Int64(status == current ? 1 : 0))
            }
        }
        if let objects = statistics.cacheObjects, let bytes = statistics.cacheBytes {
            registry.prometheus.makeGauge(descriptor: MetricFamilies.cacheObjects).set(Int64(objects))
            registry.prometheus.makeGauge(descriptor: MetricFamilies.cacheBytes).set(bytes)
        }
    }
}
