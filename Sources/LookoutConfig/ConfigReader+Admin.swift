import Yams

/// The `admin`, `metrics` and `ui` sections: the proxy's own pages.
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
        if let node = section["token"] {
            switch scalarValue(node) {
            case .null:
                admin.token = nil
            case .text(let text, _):
                // The value itself never goes into a message: it is a secret.
                if let problem = LookoutConfiguration.Admin.tokenProblem(text) {
                    fail(node, "admin.token", problem)
                } else {
                    admin.token = text
                }
            case .notScalar:
                fail(node, "admin.token", "must be a string, \(got(node))")
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

    func readUI(_ section: [String: Node], into ui: inout LookoutConfiguration.UI) {
        if let node = section["enabled"] {
            ui.enabled = boolean(node, "ui.enabled") ?? ui.enabled
        }
        if let node = section["ring_size"] {
            ui.ringSize = integer(node, "ui.ring_size", in: 1...1_000_000, rangeMessage: "must be between 1 and 1000000")
                ?? ui.ringSize
        }
        if let node = section["heartbeat"] {
            ui.heartbeat = seconds(node, "ui.heartbeat") ?? ui.heartbeat
        }
    }
}
