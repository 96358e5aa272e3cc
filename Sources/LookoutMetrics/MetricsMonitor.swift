import Dispatch
import LookoutAdmin
import LookoutModel

/// Counts every finished exchange into Prometheus series (`/metrics`, served by `MetricsEndpoint`
/// from the same registry). It asks only for summaries, so the traffic pays for one more mailbox
/// post per exchange; the counting runs on the monitor's own queue.
public final class MetricsMonitor: EventMonitor, @unchecked Sendable {  // `metrics` is confined to `queue`
    public let queue = DispatchQueue(label: "lookout.metrics")
    public var interest: EventInterest { .summaries }
    private let registry: MetricsRegistry
    private let metrics: ExchangeMetrics

    public init(registry: MetricsRegistry, settings: MetricsSettings = MetricsSettings()) {
        self.registry = registry
        metrics = ExchangeMetrics(registry: registry.prometheus, settings: settings)
    }

    public func receive(_ event: LookoutEvent) {
        // A scrape sees an exchange whole or not at all (`MetricsRegistry`).
        registry.counting {
            if event.withSummary({ metrics.record($0) }) == nil, let rejection = event.kind(ConnectionWasRejected.self) {
                metrics.recordRejection(rejection.error)
            }
        }
    }
}
