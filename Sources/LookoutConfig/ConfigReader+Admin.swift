import LookoutModel
import Yams

/// The `admin`, `metrics` and `ui` sections: the proxy's own pages; `messages`, what they show
/// inside streams.
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

    func readPAC(_ section: [String: Node], into pac: inout LookoutConfiguration.PAC) {
        if let node = section["direct"] {
            pac.direct = hostPatterns(node, path: "pac.direct", allowEmpty: true) ?? pac.direct
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

    func readMessages(_ section: [String: Node], into messages: inout MessagesSettings) {
        if let node = section["enabled"] {
            messages.enabled = boolean(node, "messages.enabled") ?? messages.enabled
        }
        if let node = section["preview_bytes"] {
            messages.previewBytes = integer(node, "messages.preview_bytes", in: 0...65536,
                                            rangeMessage: "must be between 0 and 65536") ?? messages.previewBytes
        }
        if let node = section["decode_budget_bytes"] {
            messages.decodeBudgetBytes = integer(node, "messages.decode_budget_bytes", in: 0...(1 << 34),
                                                 rangeMessage: "must be between 0 and 17179869184") ?? messages.decodeBudgetBytes
        }
    }

    func readHTTP2(_ section: [String: Node], into http2: inout LookoutConfiguration.HTTP2) {
        if let node = section["client"] {
            http2.client = boolean(node, "http2.client") ?? http2.client
        }
        if let node = section["upstream"] {
            http2.upstream = boolean(node, "http2.upstream") ?? http2.upstream
        }
        if let node = section["upstream_h2c_hosts"],
           let hosts = hostPatterns(node, path: "http2.upstream_h2c_hosts", allowEmpty: true) {
            http2.upstreamH2CHosts = hosts
        }
        if let node = section["max_concurrent_streams"] {
            // RFC 9113 §6.5.2 recommends no fewer than 100; 1 still works, just serially.
            http2.maxConcurrentStreams = integer(node, "http2.max_concurrent_streams", in: 1...10_000,
                                                 rangeMessage: "must be between 1 and 10000") ?? http2.maxConcurrentStreams
        }
        if let node = section["max_header_list_bytes"] {
            http2.maxHeaderListBytes = integer(node, "http2.max_header_list_bytes", in: 1024...16_777_216,
                                               rangeMessage: "must be between 1024 and 16777216") ?? http2.maxHeaderListBytes
        }
    }
}
