import LookoutModel
import LookoutRecordings
import Yams

/// The `simulate` section. Each recording is read here, so that `lookout config check` names a
/// bad file and the entry that is wrong.
extension ConfigReader {
    func readSimulate(_ section: [String: Node], into settings: inout SimulateSettings) {
        if let node = section["recordings"] {
            let files = stringList(node, path: "simulate.recordings", expected: "recording files (Lookout logs or HAR)") ?? []
            settings.recordings = files.compactMap { text, fileNode, filePath -> String? in
                guard let file = resolve(text) else { return nil }
                do throws(RecordingError) {
                    _ = try RecordingReader.read(file)
                } catch {
                    fail(fileNode, filePath, error.description)
                    return nil
                }
                return file
            }
        }
        if let node = section["mode"] {
            guard case .text(let text, _) = scalarValue(node), let mode = SimulateSettings.Mode(rawValue: text) else {
                fail(node, "simulate.mode", "expected simulate, spy or off, \(got(node))")
                return
            }
            settings.mode = mode
        }
        if let node = section["match"], let match = fields(of: node, path: "simulate.match", known: Schema.simulateMatch) {
            readMatch(match, into: &settings)
        }
        if let node = section["repeat"] {
            guard case .text(let text, _) = scalarValue(node), let repetition = SimulateSettings.Repeat(rawValue: text) else {
                fail(node, "simulate.repeat", "expected sequence, first or cycle, \(got(node))")
                return
            }
            settings.repetition = repetition
        }
        if let node = section["latency"] {
            guard case .text(let text, _) = scalarValue(node), text == "none" || text == "recorded" else {
                fail(node, "simulate.latency", "expected none or recorded, \(got(node))")
                return
            }
            settings.recordedLatency = text == "recorded"
        }
        if settings.mode != .off, settings.recordings.isEmpty, errors.isEmpty, let node = section["mode"] {
            fail(node, "simulate.recordings", "simulate.mode \(settings.mode.rawValue) needs at least one recording")
        }
    }

    private func readMatch(_ match: [String: Node], into settings: inout SimulateSettings) {
        if let node = match["on"], let parts = stringList(node, path: "simulate.match.on", expected: "method, url or body") {
            for (part, partNode, partPath) in parts where !["method", "url", "body"].contains(part) {
                fail(partNode, partPath, "expected method, url or body, got \(quoted(shortened(part)))")
            }
            settings.matchMethod = parts.contains { $0.0 == "method" }
            settings.matchURL = parts.contains { $0.0 == "url" }
            settings.matchBody = parts.contains { $0.0 == "body" }
        }
        if let node = match["headers"] {
            settings.matchHeaders = (stringList(node, path: "simulate.match.headers", expected: "header names") ?? []).map(\.0)
        }
        if let node = match["ignore_query"] {
            settings.ignoreQuery = (stringList(node, path: "simulate.match.ignore_query", expected: "query parameter names") ?? [])
                .map(\.0)
        }
        if let node = match["ignore_json"] {
            let paths = stringList(node, path: "simulate.match.ignore_json", expected: "JSON paths such as $.requestId") ?? []
            for (path, pathNode, pathPath) in paths where !path.hasPrefix("$") {
                fail(pathNode, pathPath, "a JSON path starts with $, got \(quoted(shortened(path)))")
            }
            settings.ignoreJSON = paths.map(\.0)
        }
    }
}
