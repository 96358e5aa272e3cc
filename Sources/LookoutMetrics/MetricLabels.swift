import LookoutAdmin
import LookoutTLS
import LookoutModel

/// The label values of Lookout's series, each from a bounded set so a client cannot grow the
/// number of series: unknown methods are `OTHER`, statuses are classes, hosts are config entries.
struct MetricLabels: Sendable {
    /// `host` label values by pattern; nil when `metrics.host_labels` is empty.
    private let hosts: HostRuleSet<String>?

    init(settings: MetricsSettings) {
        hosts = settings.hostLabels.isEmpty
            ? nil : HostRuleSet(settings.hostLabels.map { (hosts: [$0], rule: $0.description) })
    }

    /// The methods of RFC 9110 §9 and PATCH (RFC 5789), then `OTHER` for any other token.
    static let methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "OTHER"]

    /// The index of `method`'s label value in `methods` (a handful of short comparisons).
    static func methodIndex(_ method: String) -> UInt8 {
        UInt8(methods.firstIndex(of: method) ?? methods.count - 1)
    }

    /// "1xx" … "5xx", then "none" when no status was sent (the client went away, a reset).
    static let statusClasses = ["1xx", "2xx", "3xx", "4xx", "5xx", "none"]

    /// The index of `status`'s label value in `statusClasses`.
    static func statusClassIndex(_ status: Int?) -> UInt8 {
        guard let status, (100...599).contains(status) else { return 5 }
        return UInt8(status / 100 - 1)
    }

    /// The `host` label value for `summary`, when host labels are configured (the URL is read only then).
    func host(of summary: ExchangeSummary) -> String? {
        guard let hosts else { return nil }
        return hosts.rule(for: String(summary.host)) ?? "other"
    }
}
