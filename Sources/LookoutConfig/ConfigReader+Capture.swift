import Yams

/// The `capture` section.
extension ConfigReader {
    func readCapture(_ section: [String: Node], into capture: inout LookoutConfiguration.Capture) {
        if let node = section["path"] {
            capture.path = directoryOrDefault(node, "capture.path", defaultName: "capture") ?? capture.path
        }
        if let node = section["max_total_bytes"] {
            capture.maxTotalBytes = integer(node, "capture.max_total_bytes", atLeast: 1) ?? capture.maxTotalBytes
        }
        if let node = section["rules"] {
            let rules = ruleList(node, path: "capture.rules", known: Schema.captureRule, what: "capture rules") { section, elementPath in
                var rule = CaptureRuleSettings()
                if let node = section["request_bodies"] {
                    rule.requestBodies = boolean(node, "\(elementPath).request_bodies") ?? rule.requestBodies
                }
                if let node = section["response_bodies"] {
                    rule.responseBodies = boolean(node, "\(elementPath).response_bodies") ?? rule.responseBodies
                }
                if let node = section["max_body_bytes"] {
                    rule.maxBodyBytes = integer(node, "\(elementPath).max_body_bytes", atLeast: 1) ?? rule.maxBodyBytes
                }
                return rule
            } hosts: { $0.hosts = $1 }
            capture.rules = rules ?? capture.rules
        }
    }
}
