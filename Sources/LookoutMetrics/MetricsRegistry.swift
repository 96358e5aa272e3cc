import Prometheus
import LookoutSync

/// The Prometheus registry Lookout's series live in, with the lock that keeps a scrape whole.
///
/// The registry locks each series on its own and renders its families in its dictionary's order,
/// which differs from process to process. A scrape that ran while an exchange was being counted
/// could therefore show the exchange without its trust decision, or its trust decision without
/// the exchange. Here an exchange is counted (phases, bytes, connection, trust, then the exchange
/// itself) under one lock and a scrape renders under the same lock, so every scrape falls between
/// two exchanges. Counting holds the lock for a few microseconds on the metrics monitor's queue;
/// a scrape holds it for one rendering on the loop that serves it.
public final class MetricsRegistry: Sendable {
    public let prometheus: PrometheusCollectorRegistry
    private let wholeExchanges = Guarded(())

    public init(_ prometheus: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.prometheus = prometheus
    }

    /// Runs one exchange's (or one scrape's session totals') increments as a unit.
    func counting(_ increments: () -> Void) {
        wholeExchanges.withLock { _ in increments() }
    }

    /// The text exposition of every series, between two counted units.
    func render() -> [UInt8] {
        wholeExchanges.withLock { _ in prometheus.emitToBuffer() }
    }
}
