import Foundation
import LookoutTLS
import Yams

/// The `map` and `shaping` sections: each value checked here, so that `lookout config check`
/// names the line of a bad one (and a map-local file that cannot be read).
extension ConfigReader {
    // MARK: - Map

    func readMap(_ section: [String: Node], into map: inout LookoutConfiguration.Map) {
        if let node = section["remote"] { map.remote = mapRemoteRules(node, path: "map.remote") ?? map.remote }
        if let node = section["local"] { map.local = mapLocalRules(node, path: "map.local") ?? map.local }
    }

    private func mapRemoteRules(_ node: Node, path: String) -> [MapRemoteSettings]? {
        mapRules(node, path: path, known: Schema.mapRemote, what: "map remote rules ({from, to})") { entry, elementPath, from in
            guard let toNode = entry["to"] else {
                fail(entry["from"]!, "\(elementPath).to", "a map remote rule needs to (the URL prefix requests go to)")
                return nil
            }
            guard let to = urlPrefix(toNode, path: "\(elementPath).to", allowPattern: false) else { return nil }
            var rule = MapRemoteSettings(from: from, to: to)
            if let node = entry["preserve_host"] {
                rule.preserveHost = boolean(node, "\(elementPath).preserve_host") ?? rule.preserveHost
            }
            if let node = entry["allow_downgrade"] {
                rule.allowDowngrade = boolean(node, "\(elementPath).allow_downgrade") ?? rule.allowDowngrade
            }
            return rule
        }
    }

    private func mapLocalRules(_ node: Node, path: String) -> [MapLocalSettings]? {
        mapRules(node, path: path, known: Schema.mapLocal, what: "map local rules ({from, file})") { entry, elementPath, from in
            guard let fileNode = entry["file"] else {
                fail(entry["from"]!, "\(elementPath).file", "a map local rule needs file (the file that answers)")
                return nil
            }
            guard case .text(let text, _) = scalarValue(fileNode), !text.isEmpty, let file = resolve(text) else {
                fail(fileNode, "\(elementPath).file", "expected a file path (relative to the config file's folder), \(got(fileNode))")
                return nil
            }
            if let problem = Self.readableFileProblem(file) {
                fail(fileNode, "\(elementPath).file", "\(file): \(problem)")
                return nil
            }
            var rule = MapLocalSettings(from: from, file: file)
            if let node = entry["status"] {
                rule.status = integer(node, "\(elementPath).status", expected: "a status code", in: 200...599,
                                      rangeMessage: "must be a final status from 200 to 599") ?? rule.status
            }
            if let node = entry["content_type"], !isNull(node), !isEmptyText(node) {
                if case .text(let type, _) = scalarValue(node), type.contains("/"),
                   type.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
                    rule.contentType = type
                } else {
                    fail(node, "\(elementPath).content_type", "expected a media type such as application/json, \(got(node))")
                }
            }
            return rule
        }
    }

    /// A list of `{from, …}` mappings; `from` is a URL prefix (its host may be a pattern) and no
    /// two rules of the list have the same one.
    private func mapRules<Rule>(_ node: Node, path: String, known: [String], what: String,
                                read: ([String: Node], String, MapURLPrefix) -> Rule?) -> [Rule]? {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            fail(node, path, "expected a list of \(what), \(got(node))")
            return nil
        }
        var rules: [Rule] = []
        var seen: [String: Int] = [:]
        let errorsBefore = errors.count
        for (index, element) in sequence.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard let entry = fields(of: element, path: elementPath, known: known) else { continue }
            guard let fromNode = entry["from"] else {
                fail(element, "\(elementPath).from", "a rule needs from (the URL prefix it maps)")
                continue
            }
            guard let from = urlPrefix(fromNode, path: "\(elementPath).from", allowPattern: true) else { continue }
            let key = "\(from.scheme)://\(from.host):\(from.port)\(from.path)"
            if let line = seen[key] {
                fail(fromNode, "\(elementPath).from", "\(from.text) is already mapped (line \(line))")
                continue
            }
            seen[key] = fromNode.mark?.line ?? 0
            if let rule = read(entry, elementPath, from) { rules.append(rule) }
        }
        return errors.count == errorsBefore ? rules : nil
    }

    private func urlPrefix(_ node: Node, path: String, allowPattern: Bool) -> MapURLPrefix? {
        guard case .text(let text, _) = scalarValue(node) else {
            fail(node, path, "expected a URL such as https://api.example.com/v2/, \(got(node))")
            return nil
        }
        switch MapURLPrefix.parse(text, allowPattern: allowPattern) {
        case .success(let prefix): return prefix
        case .failure(let error):
            fail(node, path, "\(quoted(shortened(text))): \(error.message)")
            return nil
        }
    }

    private func isEmptyText(_ node: Node) -> Bool {
        if case .text(let text, _) = scalarValue(node) { return text.isEmpty }
        return false
    }

    /// Why `file` cannot answer requests, or nil when it is a readable regular file.
    static func readableFileProblem(_ file: String) -> String? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else { return "no such file" }
        if isDirectory.boolValue { return "is a folder, not a file" }
        guard FileManager.default.isReadableFile(atPath: file) else { return "cannot be read (permission denied)" }
        return nil
    }

    // MARK: - Shaping

    func shapingRules(_ node: Node, path: String) -> [ShapingRuleSettings]? {
        ruleList(node, path: path, known: Schema.shapingRule, what: "shaping rules") { section, elementPath in
            var rule = ShapingRuleSettings()
            if let node = section["profile"] {
                if case .text(let name, _) = scalarValue(node) {
                    if let profile = ShapingProfile.named(name) {
                        rule.profile = profile.name
                        rule.latencyMilliseconds = profile.latencyMilliseconds
                        rule.downloadKbps = profile.downloadKbps
                        rule.uploadKbps = profile.uploadKbps
                    } else if !name.isEmpty {
                        fail(node, "\(elementPath).profile", "unknown profile \(quoted(shortened(name))) (one of \(ShapingProfile.all.map(\.name).joined(separator: ", ")))")
                    }
                } else if !isNull(node) {
                    fail(node, "\(elementPath).profile", "expected a profile name such as \"fast-3g\", \(got(node))")
                }
            }
            // What the rule says itself wins over its profile.
            if let node = section["latency_ms"] {
                rule.latencyMilliseconds = number(node, "\(elementPath).latency_ms", maximum: 600_000) ?? rule.latencyMilliseconds
            }
            if let node = section["jitter_ms"] {
                rule.jitterMilliseconds = number(node, "\(elementPath).jitter_ms", maximum: 600_000) ?? rule.jitterMilliseconds
            }
            if rule.jitterMilliseconds > rule.latencyMilliseconds, let node = section["jitter_ms"] {
                fail(node, "\(elementPath).jitter_ms", "must not exceed latency_ms (\(rule.latencyMilliseconds)): a delay cannot be negative")
            }
            if let node = section["download_kbps"] {
                rule.downloadKbps = number(node, "\(elementPath).download_kbps", maximum: 100_000_000) ?? rule.downloadKbps
            }
            if let node = section["upload_kbps"] {
                rule.uploadKbps = number(node, "\(elementPath).upload_kbps", maximum: 100_000_000) ?? rule.uploadKbps
            }
            if let node = section["faults"], let faults = fields(of: node, path: "\(elementPath).faults", known: Schema.shapingFaults) {
                readFaults(faults, path: "\(elementPath).faults", into: &rule)
            }
            return rule
        } hosts: { $0.hosts = $1 }
    }

    private func readFaults(_ faults: [String: Node], path: String, into rule: inout ShapingRuleSettings) {
        if let node = faults["status"], !isNull(node),
           let status = fields(of: node, path: "\(path).status", known: Schema.faultStatus) {
            if let code = status["code"] {
                rule.faultStatus = integer(code, "\(path).status.code", expected: "a status code", in: 400...599,
                                           rangeMessage: "an injected status is an error: 400 to 599")
            } else {
                fail(node, "\(path).status.code", "an injected status needs code (e.g. 503)")
            }
            if let node = status["rate"] {
                if case .text(let text, plain: true) = scalarValue(node), let value = parseNumber(text), value >= 0, value <= 1 {
                    rule.faultStatusRate = value
                } else {
                    fail(node, "\(path).status.rate", "expected the share of requests, from 0 to 1, \(got(node))")
                }
            }
        }
        if let node = faults["reset_after_bytes"] {
            rule.resetAfterBytes = integer(node, "\(path).reset_after_bytes", in: 0...Int.max,
                                           rangeMessage: "must not be negative (0 = never)") ?? rule.resetAfterBytes
        }
        if let node = faults["stall_ms"] {
            rule.stallMilliseconds = number(node, "\(path).stall_ms", maximum: 3_600_000) ?? rule.stallMilliseconds
        }
    }

    /// A number from 0 to `maximum`.
    private func number(_ node: Node, _ path: String, maximum: Double) -> Double? {
        guard case .text(let text, plain: true) = scalarValue(node), let value = parseNumber(text), value.isFinite else {
            fail(node, path, "expected a number, \(got(node))")
            return nil
        }
        guard value >= 0 else {
            fail(node, path, "must not be negative (0 = none)")
            return nil
        }
        guard value <= maximum else {
            fail(node, path, "must be at most \(Int(maximum))")
            return nil
        }
        return value
    }
}
