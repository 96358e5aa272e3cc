import Foundation

/// A `RecordingDiff` written for people (a table) or for programs (JSON).
public enum DiffReport {
    public static func table(_ diff: RecordingDiff) -> String {
        var lines: [String] = []
        for exchange in diff.missing { lines.append("- missing  #\(exchange.index)  \(exchange.method) \(exchange.url)") }
        for exchange in diff.added { lines.append("+ added    #\(exchange.index)  \(exchange.method) \(exchange.url)") }
        for change in diff.changed {
            lines.append("~ changed  #\(change.a.index) → #\(change.b.index)  \(change.a.method) \(change.a.url)")
            if let status = change.status { lines.append("    status: \(text(status.a)) → \(text(status.b))") }
            for header in change.headers {
                lines.append("    \(header.side) header \(header.name): \(text(header.a)) → \(text(header.b))")
            }
            switch change.body {
            case .json(let changes)?:
                for item in changes { lines.append("    body \(item.path) (\(item.kind)): \(text(item.a)) → \(text(item.b))") }
            case .bytes(let a, let b, let first)?:
                lines.append("    body: \(a) → \(b) bytes, first difference at byte \(first)")
            case .unknown(let why)?:
                lines.append("    body: \(why)")
            case nil:
                break
            }
            if let timing = change.timing {
                lines.append(String(format: "    total: %.1f → %.1f ms", timing.a, timing.b))
            }
        }
        let verdict = diff.isEqual ? "equal" : "different"
        lines.append("\(verdict): \(diff.pairs) paired, \(diff.changed.count) changed, \(diff.added.count) added, \(diff.missing.count) missing")
        return lines.joined(separator: "\n") + "\n"
    }

    public static func json(_ diff: RecordingDiff) -> String {
        func exchange(_ e: RecordedExchange) -> [String: Any] {
            ["index": e.index, "method": e.method, "url": e.url, "status": e.status as Any? ?? NSNull()]
        }
        let changed: [[String: Any]] = diff.changed.map { change in
            var object: [String: Any] = ["a": change.a.index, "b": change.b.index, "method": change.a.method, "url": change.a.url]
            if let status = change.status {
                object["status"] = ["a": status.a as Any? ?? NSNull(), "b": status.b as Any? ?? NSNull()]
            }
            if !change.headers.isEmpty {
                object["headers"] = change.headers.map { header -> [String: Any] in
                    ["side": header.side, "name": header.name, "a": header.a as Any? ?? NSNull(), "b": header.b as Any? ?? NSNull()]
                }
            }
            switch change.body {
            case .json(let changes)?:
                object["body"] = ["json": changes.map { ["path": $0.path, "kind": $0.kind, "a": $0.a as Any? ?? NSNull(),
                                                         "b": $0.b as Any? ?? NSNull()] }]
            case .bytes(let a, let b, let first)?:
                object["body"] = ["bytes": ["a": a, "b": b, "first_difference": first]]
            case .unknown(let why)?:
                object["body"] = ["unknown": why]
            case nil:
                break
            }
            if let timing = change.timing { object["total_ms"] = ["a": timing.a, "b": timing.b] }
            return object
        }
        let document: [String: Any] = [
            "equal": diff.isEqual, "paired": diff.pairs, "changed": changed,
            "added": diff.added.map(exchange), "missing": diff.missing.map(exchange),
        ]
        let data = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    private static func text(_ value: Any?) -> String {
        switch value {
        case nil: return "(none)"
        case let int as Int: return String(int)
        case let string as String: return string
        default: return "\(value!)"
        }
    }
}
