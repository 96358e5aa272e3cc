import Foundation
import LookoutLogQuery

/// Two recordings compared (`lookout diff A B`): exchanges paired by method and URL in order (or
/// by position), then what was added or is missing, and for each pair its status, header, body
/// and (past a threshold) timing changes, under the ignores given.
public struct RecordingDiff {
    public enum Pairing: String, Sendable { case url, order }

    public struct Options: Sendable {
        public var pairing = Pairing.url
        /// Header names (lowercase) left out.
        public var ignoredHeaders: Set<String> = []
        /// JSON paths left out of body comparisons (`$.ts`, `$.items[*].id`).
        public var ignoredJSON: [String] = []
        /// Milliseconds of total time a pair may differ by before it counts; nil = timing ignored.
        public var timingThreshold: Double?
        public init() {}
    }

    public struct Change: Sendable {
        public let a: RecordedExchange
        public let b: RecordedExchange
        public var status: (a: Int?, b: Int?)?
        /// "request"/"response", the name, and each side's value (nil: absent).
        public var headers: [(side: String, name: String, a: String?, b: String?)] = []
        public var body: BodyComparison.Difference?
        public var timing: (a: Double, b: Double)?
        public var isEmpty: Bool { status == nil && headers.isEmpty && body == nil && timing == nil }
    }

    public let added: [RecordedExchange]
    public let missing: [RecordedExchange]
    public let changed: [Change]
    public let pairs: Int
    public var isEqual: Bool { added.isEmpty && missing.isEmpty && changed.isEmpty }

    public init(_ a: [RecordedExchange], _ b: [RecordedExchange], options: Options) {
        var paired: [(RecordedExchange, RecordedExchange)] = []
        var added: [RecordedExchange] = []
        var missing: [RecordedExchange] = []
        switch options.pairing {
        case .order:
            for index in 0..<max(a.count, b.count) {
                if index < a.count && index < b.count { paired.append((a[index], b[index])) }
                else if index < a.count { missing.append(a[index]) } else { added.append(b[index]) }
            }
        case .url:
            // Repeated requests pair in the order they were made.
            var waiting: [String: [RecordedExchange]] = [:]
            for exchange in a { waiting[Self.key(exchange), default: []].append(exchange) }
            for exchange in b {
                let key = Self.key(exchange)
                if var queue = waiting[key], !queue.isEmpty {
                    paired.append((queue.removeFirst(), exchange))
                    waiting[key] = queue
                } else {
                    added.append(exchange)
                }
            }
            missing = waiting.values.flatMap { $0 }.sorted { $0.index < $1.index }
        }
        self.added = added
        self.missing = missing
        self.pairs = paired.count
        changed = paired.compactMap { Self.compare($0, $1, options) }
    }

    static func key(_ exchange: RecordedExchange) -> String { exchange.method + " " + exchange.url }

    private static func compare(_ a: RecordedExchange, _ b: RecordedExchange, _ options: Options) -> Change? {
        var change = Change(a: a, b: b)
        if a.status != b.status { change.status = (a.status, b.status) }
        change.headers = headerChanges("request", a.requestHeaders, b.requestHeaders, options.ignoredHeaders)
            + headerChanges("response", a.responseHeaders, b.responseHeaders, options.ignoredHeaders)
        change.body = BodyComparison.compare(a.responseBody, b.responseBody, ignoringJSON: options.ignoredJSON)
        if let threshold = options.timingThreshold, let x = a.totalMilliseconds, let y = b.totalMilliseconds,
           abs(x - y) > threshold {
            change.timing = (x, y)
        }
        return change.isEmpty ? nil : change
    }

    private static func headerChanges(_ side: String, _ a: [(name: String, value: String)], _ b: [(name: String, value: String)],
                                      _ ignored: Set<String>) -> [(side: String, name: String, a: String?, b: String?)] {
        func values(_ fields: [(name: String, value: String)]) -> [String: String] {
            var map: [String: String] = [:]
            for (name, value) in fields where !ignored.contains(name.lowercased()) {
                map[name.lowercased()] = map[name.lowercased()].map { $0 + ", " + value } ?? value
            }
            return map
        }
        let x = values(a), y = values(b)
        return Set(x.keys).union(y.keys).sorted().compactMap { name in
            x[name] == y[name] ? nil : (side, name, x[name], y[name])
        }
    }
}
