import Foundation
import LookoutModel
import LookoutSync

/// Finds the recorded answer for a request (`simulate`): recordings read once, indexed by method
/// and URL (ignored query parameters left out), then narrowed by the listed request fields and,
/// when asked, the body (as JSON when both sides are, ignored paths left out). A request recorded
/// several times gets its answers in order (`repeat`).
public final class RecordingMatcher: Sendable {
    public struct Answer: Sendable {
        public let recording: String
        public let entry: Int
        public let status: Int
        public let headers: [(name: String, value: String)]
        public let body: RecordedBody
        public let waitMilliseconds: Double?
    }

    public enum Outcome: Sendable {
        case answer(Answer)
        /// No recorded request matches; the closest one, described, when there is any.
        case miss(closest: String?)
    }

    /// Recorded request bodies up to this size take part in body matching (they are kept in memory).
    public static let maximumMatchedBody = 1 << 20

    private struct Candidate: Sendable {
        let exchange: RecordedExchange
        let fields: [String: String]
        let body: [UInt8]?
    }

    private let settings: SimulateSettings
    private let index: [String: [Candidate]]
    private let all: [(key: String, description: String)]
    private let cursors = Guarded<[String: Int]>([:])
    public let count: Int

    public init(settings: SimulateSettings) throws(RecordingError) {
        self.settings = settings
        var index: [String: [Candidate]] = [:]
        var all: [(String, String)] = []
        for file in settings.recordings {
            for exchange in try RecordingReader.read(file) where exchange.status != nil {
                let key = Self.key(method: exchange.method, url: exchange.url, settings)
                var fields: [String: String] = [:]
                for (name, value) in exchange.requestHeaders { fields[name.lowercased()] = value }
                let body = settings.matchBody ? Self.load(exchange.requestBody) : nil
                index[key, default: []].append(Candidate(exchange: exchange, fields: fields, body: body))
                all.append((key, "\(exchange.method) \(exchange.url) (\(file) entry \(exchange.index))"))
            }
        }
        self.index = index
        self.all = all
        count = all.count
    }

    public func match(method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]?) -> Outcome {
        let key = Self.key(method: method, url: url, settings)
        var fields: [String: String] = [:]
        for (name, value) in headers { fields[name.lowercased()] = value }
        let candidates = (index[key] ?? []).filter { candidate in
            settings.matchHeaders.allSatisfy { candidate.fields[$0.lowercased()] == fields[$0.lowercased()] }
                && (!settings.matchBody || Self.sameBody(candidate.body, body ?? [], ignoring: settings.ignoreJSON))
        }
        guard !candidates.isEmpty else { return .miss(closest: closest(to: key)) }
        // The cursor is per request as matched, so each distinct request walks its own answers.
        let cursorKey = key + "\u{0}" + String(candidates[0].exchange.index) + candidates[0].exchange.file
        let position: Int = cursors.withLock { cursors in
            let next = cursors[cursorKey, default: 0]
            cursors[cursorKey] = next + 1
            return next
        }
        let chosen: Candidate
        switch settings.repetition {
        case .first: chosen = candidates[0]
        case .sequence: chosen = candidates[min(position, candidates.count - 1)]
        case .cycle: chosen = candidates[position % candidates.count]
        }
        let exchange = chosen.exchange
        return .answer(Answer(recording: exchange.file, entry: exchange.index, status: exchange.status ?? 502,
                              headers: exchange.responseHeaders, body: exchange.responseBody,
                              waitMilliseconds: exchange.waitMilliseconds))
    }

    static func key(method: String, url: String, _ settings: SimulateSettings) -> String {
        var target = url
        if !settings.ignoreQuery.isEmpty, let question = url.firstIndex(of: "?") {
            let kept = url[url.index(after: question)...].split(separator: "&").filter { pair in
                let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                return !settings.ignoreQuery.contains(name.removingPercentEncoding ?? name)
            }
            target = String(url[..<question]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
        }
        return (settings.matchMethod ? method.uppercased() : "*") + " " + (settings.matchURL ? target : "*")
    }

    private static func load(_ body: RecordedBody) -> [UInt8]? {
        switch body {
        case .none: return []
        case .bytes(let bytes): return bytes.count <= maximumMatchedBody ? bytes : nil
        case .sizeOnly: return nil
        case .file(let path, _):
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
            guard let size, size <= maximumMatchedBody else { return nil }
            return FileManager.default.contents(atPath: path).map(Array.init)
        }
    }

    private static func sameBody(_ recorded: [UInt8]?, _ body: [UInt8], ignoring: [String]) -> Bool {
        guard let recorded else { return false }
        if recorded == body { return true }
        guard let a = JSONDiff.parse(recorded), let b = JSONDiff.parse(body) else { return false }
        return JSONDiff.changes(a, b, ignoring: ignoring, limit: 1).isEmpty
    }

    /// The recorded request whose method and URL share the longest beginning with `key`.
    private func closest(to key: String) -> String? {
        func shared(_ other: String) -> Int { zip(key, other).prefix { $0 == $1 }.count }
        return all.max { shared($0.key) < shared($1.key) }?.description
    }
}
