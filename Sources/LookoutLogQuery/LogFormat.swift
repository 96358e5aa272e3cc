/// How `lookout log` prints the records it selects.
public enum LogFormat: String, CaseIterable, Sendable {
    /// The lines as they are in the log.
    case jsonl
    /// One JSON array of the records.
    case json
    /// One row per exchange: time, id, method, status, total, cache, URL.
    case table
    /// RFC 4180 CSV with a header row.
    case csv
    /// Each exchange as a ready `curl` command line ("Copy as cURL"): method, URL, the request's
    /// headers (when logged, as they are for captured exchanges) and its captured body.
    case curl
    /// HAR 1.2, with captured bodies (decoded: gzip, deflate, br).
    case har

    /// The text before the first record; `version` is Lookout's (HAR names its creator).
    public func header(version: String) -> String {
        switch self {
        case .har: return HARFormat.header(creatorVersion: version)
        case .json: return "["
        case .table: return Self.pad("TIME", 27) + Self.pad("ID", 8) + Self.pad("METHOD", 8) + Self.pad("STATUS", 7)
            + Self.pad("TOTAL_MS", 10) + Self.pad("CACHE", 12) + "URL\n"
        case .csv: return "ts,id,conn,client,kind,method,url,status,total_ms,error,cache,request_body_bytes,response_body_bytes\n"
        case .jsonl, .curl: return ""
        }
    }

    /// The text after the last record.
    public var footer: String { self == .json ? "\n]\n" : self == .har ? HARFormat.footer : "" }

    /// One record; `index` counts from 0 (for the JSON array's commas).
    public func render(_ record: LogRecord, index: Int) -> String {
        switch self {
        case .jsonl:
            return record.text + "\n"
        case .json:
            return (index == 0 ? "\n" : ",\n") + record.text
        case .table:
            let status = record.number("status").map(LogRecord.integerText) ?? (record.string("error", "code") ?? "-")
            let total = record.number("timings_ms", "total").map { String(format3($0)) } ?? "-"
            return Self.pad(record.string("ts") ?? "-", 27) + Self.pad(record.number("id").map(LogRecord.integerText) ?? "-", 8)
                + Self.pad(record.string("method") ?? "-", 8) + Self.pad(status, 7) + Self.pad(total, 10)
                + Self.pad(record.string("cache", "status") ?? "-", 12) + (record.string("url") ?? "-") + "\n"
        case .csv:
            let fields: [String?] = [
                record.string("ts"), record.number("id").map(LogRecord.integerText), record.number("conn").map(LogRecord.integerText),
                record.string("client"), record.string("kind"), record.string("method"), record.string("url"),
                record.number("status").map(LogRecord.integerText), record.number("timings_ms", "total").map(format3),
                record.string("error", "code"), record.string("cache", "status"),
                record.number("bytes", "request_body").map(LogRecord.integerText),
                record.number("bytes", "response_body").map(LogRecord.integerText),
            ]
            return fields.map { Self.csvField($0 ?? "") }.joined(separator: ",") + "\n"
        case .curl:
            return Self.curlCommand(record)
        case .har:
            return HARFormat.entry(record, index: index)
        }
    }

    static func curlCommand(_ record: LogRecord) -> String {
        guard let url = record.string("url") else { return "" }
        var parts = ["curl"]
        let method = record.string("method") ?? "GET"
        if method == "CONNECT" { return "# \(url): a CONNECT tunnel (no request to repeat)\n" }
        if method != "GET" { parts += ["-X", shellQuoted(method)] }
        parts.append(shellQuoted(url))
        // Hop-by-hop and framing fields are curl's own business; redacted values are no use.
        let skipped: Set<String> = ["host", "content-length", "transfer-encoding", "connection", "proxy-connection",
                                    "proxy-authorization", "keep-alive", "te", "upgrade"]
        for (name, value) in record.stringMembers("request_headers") where !skipped.contains(name) && value != "[redacted]" {
            parts += ["-H", shellQuoted("\(name): \(value)")]
        }
        if let body = record.string("capture", "request") {
            parts += ["--data-binary", shellQuoted("@" + body)]
        }
        return parts.joined(separator: " ") + "\n"
    }

    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

/// Milliseconds with at most three decimals, trailing zeros dropped.
func format3(_ value: Double) -> String {
    let scaled = (value * 1000).rounded() / 1000
    if scaled == scaled.rounded() { return LogRecord.integerText(scaled) }
    var text = String(scaled)
    if let dot = text.firstIndex(of: "."), text.distance(from: dot, to: text.endIndex) > 4 {
        text = String(text[...text.index(dot, offsetBy: 3)])
    }
    return text
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
