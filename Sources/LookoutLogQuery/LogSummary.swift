/// `lookout log summary`: per group (host, status, code, kind or method), the count, the share
/// with an error, the body bytes, and p50/p95/p99 of each phase (and of the time to a stream's
/// first event, when there are streams) — in bounded memory.
public struct LogSummary {
    public enum Grouping: String, CaseIterable, Sendable {
        case host, status, code, kind, method, finding, role
    }

    public struct Group {
        public var count = 0
        public var errors = 0
        public var bytes: Int64 = 0
        public var phases: [String: PhaseHistogram] = [:]
        /// `--by role`: the policy's decisions, and where the role's clients went.
        public var allowed = 0
        public var denied = 0
        public var wouldDeny = 0
        public var destinations: [String: Int] = [:]
    }

    public let grouping: Grouping
    public private(set) var groups: [String: Group] = [:]
    public static let phases = ["dns", "connect", "tls", "send", "wait", "receive", "total"]

    public init(by grouping: Grouping) {
        self.grouping = grouping
    }

    public mutating func add(_ record: LogRecord) {
        if grouping == .finding {
            // One row per finding id: an exchange with several counts in each; one with none under "-".
            let ids = Self.findingIDs(record)
            for id in ids.isEmpty ? ["-"] : ids { add(record, key: id) }
            return
        }
        let key: String
        switch grouping {
        case .host: key = record.host ?? "-"
        case .status: key = record.number("status").map(LogRecord.integerText) ?? "-"
        case .code: key = record.string("error", "code") ?? "-"
        case .kind: key = record.string("kind") ?? "-"
        case .method: key = record.string("method") ?? "-"
        case .finding: key = "-"
        case .role: key = record.string("policy", "role") ?? "-"
        }
        add(record, key: key)
    }

    /// The `id`s of the record's `findings` array.
    static func findingIDs(_ record: LogRecord) -> [String] {
        guard let span = record.span(["findings"]), record.bytes[span.start] == UInt8(ascii: "[") else { return [] }
        let bytes = record.bytes
        var ids: [String] = []
        var at = JSONScan.skipSpace(bytes, span.start + 1)
        while at < span.end, bytes[at] != UInt8(ascii: "]") {
            guard let end = JSONScan.valueEnd(bytes, at) else { break }
            if let members = JSONScan.members(bytes, from: at), let id = members.first(where: { $0.key == "id" })?.value,
               let text = JSONScan.decodeString(bytes, id.start, id.end) {
                ids.append(text)
            }
            at = JSONScan.skipSpace(bytes, end)
            if at < span.end, bytes[at] == UInt8(ascii: ",") { at = JSONScan.skipSpace(bytes, at + 1) }
        }
        return ids
    }

    private mutating func add(_ record: LogRecord, key: String) {
        var group = groups[key] ?? Group()
        group.count += 1
        if record.span(["error"]) != nil { group.errors += 1 }
        for field in ["request_body", "response_body", "client_to_upstream", "upstream_to_client"] {
            group.bytes &+= Int64(LogRecord.wholeNumber(record.number("bytes", field) ?? 0) ?? 0)
        }
        for phase in Self.phases {
            if let ms = record.number("timings_ms", phase), ms >= 0 { group.phases[phase, default: PhaseHistogram()].add(milliseconds: ms) }
        }
        // Streams: the time to the origin's first event (`messages.first_event_ms`).
        if let ms = record.number("messages", "first_event_ms"), ms >= 0 {
            group.phases["first_event", default: PhaseHistogram()].add(milliseconds: ms)
        }
        if grouping == .role {
            switch record.string("policy", "decision") {
            case "allow": group.allowed += 1
            case "deny": group.denied += 1
            default: break
            }
            if record.bool("policy", "would_deny") == true { group.wouldDeny += 1 }
            group.destinations[record.host ?? "-", default: 0] += 1
        }
        groups[key] = group
    }

    /// `--by role`: per role, the decisions and the five most frequent destinations.
    private func renderRoles() -> String {
        var rows = [["ROLE", "COUNT", "ALLOWED", "DENIED", "WOULD_DENY", "TOP_DESTINATIONS"]]
        for (key, group) in groups.sorted(by: { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.key < $1.key }) {
            let top = group.destinations.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(5)
            rows.append([key, String(group.count), String(group.allowed), String(group.denied), String(group.wouldDeny),
                         top.map { "\($0.key) (\($0.value))" }.joined(separator: ", ")])
        }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }.joined(separator: "  ")
                .trimmingTrailingSpaces()
        }.joined(separator: "\n") + "\n"
    }

    /// A table: one row per group, most exchanges first.
    public func render() -> String {
        if grouping == .role { return renderRoles() }
        var columns = [grouping.rawValue.uppercased(), "COUNT", "ERRORS", "BYTES"]
        let streams = groups.values.contains { $0.phases["first_event"] != nil }
        let phases = Self.phases + (streams ? ["first_event"] : [])
        for phase in phases { columns += ["\(phase)_p50", "\(phase)_p95", "\(phase)_p99"] }
        var rows = [columns]
        for (key, group) in groups.sorted(by: { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.key < $1.key }) {
            var row = [key, String(group.count), String(format1(Double(group.errors) * 100 / Double(group.count))) + "%", String(group.bytes)]
            for phase in phases {
                let histogram = group.phases[phase]
                for p in [50.0, 95.0, 99.0] { row.append(histogram?.percentile(p).map(format3) ?? "-") }
            }
            rows.append(row)
        }
        let widths = (0..<columns.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}

func format1(_ value: Double) -> String {
    let scaled = (value * 10).rounded() / 10
    return scaled == scaled.rounded() ? LogRecord.integerText(scaled) : String(scaled)
}

/// Times for `--since` / `--until`: RFC 3339 (`2026-11-24T09:30:00Z`, a fraction and an offset
/// allowed), or a duration back from now (`15m`, `2h`, `30s`, `1d`). Microseconds since 1970.
public enum LogTime {
    public static func parse(_ text: String, now: Int64) -> Int64? {
        if let last = text.last, "smhd".contains(last), let amount = Double(text.dropLast()) {
            let unit: Double = ["s": 1, "m": 60, "h": 3600, "d": 86_400][String(last)]!
            guard let back = Int64(exactly: (amount * unit * 1_000_000).rounded(.towardZero)) else { return nil }
            let (since, overflow) = now.subtractingReportingOverflow(back)
            return overflow ? nil : since
        }
        return timestamp(text)
    }

    /// The record's `ts` (or any RFC 3339 time) in microseconds.
    public static func timestamp(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54 || b[10] == 0x20 || b[10] == 0x74,
              b[13] == 0x3A, b[16] == 0x3A else { return nil }
        func n(_ from: Int, _ count: Int) -> Int64? {
            var v: Int64 = 0
            for i in from..<(from + count) {
                let d = Int64(b[i]) - 48
                guard d >= 0 && d <= 9 else { return nil }
                v = v * 10 + d
            }
            return v
        }
        guard let year = n(0, 4), let month = n(5, 2), let day = n(8, 2), let hour = n(11, 2), let minute = n(14, 2),
              let second = n(17, 2), (1...12).contains(month), (1...31).contains(day) else { return nil }
        var i = 19
        var micros: Int64 = 0
        if i < b.count, b[i] == 0x2E {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 6 { micros = micros * 10 + Int64(b[i]) - 48 }
                digits += 1
                i += 1
            }
            if digits < 6 { for _ in digits..<6 { micros *= 10 } }
        }
        var offset: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D, i + 6 <= b.count, b[i + 3] == 0x3A, let oh = n(i + 1, 2), let om = n(i + 4, 2) {
            offset = (oh * 3600 + om * 60) * (b[i] == 0x2B ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return ((days * 86_400 + hour * 3600 + minute * 60 + second) - offset) * 1_000_000 + micros
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}
