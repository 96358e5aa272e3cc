import LookoutTLS

/// `metrics:` in the config file.
public struct MetricsSettings: Sendable {
    /// `metrics.host_labels`: the hosts (or host patterns) whose exchanges carry a `host` label.
    /// Exchanges to any other host are labelled `host="other"`; with no entry there is no `host`
    /// label at all. This keeps the number of series bounded by the config, not by the traffic.
    public var hostLabels: [HostPattern]

    public init(hostLabels: [HostPattern] = []) {
        self.hostLabels = hostLabels
    }
}
