import LookoutAdmin

/// The status page's line for the OpenTelemetry export: where it goes, what the Collector took and
/// what was dropped. It answers no page of its own.
public final class OTelStatus: AdminEndpoint, Sendable {
    private let exporter: OTLPExporter
    private let endpoint: String

    public init(exporter: OTLPExporter, endpoint: String) {
        self.exporter = exporter
        self.endpoint = endpoint
    }

    public var statusLine: String? {
        "otel: to \(endpoint); exported \(exporter.exportedSpans.load(ordering: .relaxed)) spans, "
            + "\(exporter.exportedLogs.load(ordering: .relaxed)) log records; dropped "
            + "\(exporter.droppedSpans.load(ordering: .relaxed)) spans, \(exporter.droppedLogs.load(ordering: .relaxed)) log records"
    }

    public func answer(_ request: AdminRequest) -> AdminAnswer? { nil }
}
