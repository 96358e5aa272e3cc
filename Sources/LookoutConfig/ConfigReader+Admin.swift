import Yams

/// The `admin` and `metrics` sections.
extension ConfigReader {
    func readAdmin(_ section: [String: Node], into admin: inout LookoutConfiguration.Admin) {
        if let node = section["listen"] {
            // One address as a plain string, or a list like the top-level `listen`.
            if case .scalar = node {
                admin.listen = listen(.sequence(Node.Sequence([node])), path: "admin.listen") ?? admin.listen
            } else {
                admin.listen = listen(node, path: "admin.listen", allowEmpty: true) ?? admin.listen
            }
        }
    }

    func readMetrics(_ section: [String: Node], into metrics: inout LookoutConfiguration.Metrics) {
        if let node = section["enabled"] {
            metrics.enabled = boolean(node, "metrics.enabled") ?? metrics.enabled
        }
        if let node = section["host_labels"] {
            metrics.hostLabels = hostPatterns(node, path: "metrics.host_labels", allowEmpty: true) ?? metrics.hostLabels
        }
    }
}
