import Foundation
import Glibc
import LookoutLogQuery

/// One exchange of a recording, as the tools that compare, replay or simulate recordings see it:
/// what was asked and what was answered, whichever tool wrote the file.
public struct RecordedExchange: Sendable {
    /// Its place in the recording (0-based, in the file's order).
    public var index: Int
    public var method: String
    public var url: String
    public var status: Int?
    public var requestHeaders: [(name: String, value: String)]
    public var responseHeaders: [(name: String, value: String)]
    public var responseBody: RecordedBody
    /// Milliseconds from the request to the end of the response, when recorded.
    public var totalMilliseconds: Double?
    /// The request's body, and how long the origin took to answer (`wait`), when recorded.
    public var requestBody: RecordedBody = .none
    public var waitMilliseconds: Double?
    /// The file it was read from.
    public var file = ""
    /// When the request started and the response ended, in Unix microseconds, when recorded.
    public var startMicroseconds: Int64?
    public var endMicroseconds: Int64?
    /// The client connection it came on (a log's `conn`, a HAR entry's `connection`), when recorded.
    public var connection: String?
    /// Whether that connection carried HTTP/2, where streams overlap by design.
    public var isHTTP2 = false

    public init(index: Int, method: String, url: String, status: Int?, requestHeaders: [(name: String, value: String)],
                responseHeaders: [(name: String, value: String)], responseBody: RecordedBody, totalMilliseconds: Double?) {
        self.index = index
        self.method = method
        self.url = url
        self.status = status
        self.requestHeaders = requestHeaders
        self.responseHeaders = responseHeaders
        self.responseBody = responseBody
        self.totalMilliseconds = totalMilliseconds
    }
}

/// Where a recorded body is: a capture file (as received, content coding and all), bytes a HAR
/// file carried (decoded, as HAR keeps them), only its size, or nothing.
public enum RecordedBody: Sendable, Equatable {
    case file(path: String, contentEncoding: String?)
    case bytes([UInt8])
    case sizeOnly(Int)
    case none
}

/// A recording that cannot be read: which file, which entry, what is wrong.
public struct RecordingError: Error, CustomStringConvertible {
    public let file: String
    public let entry: Int?
    public let message: String
    public var description: String { "\(file)" + (entry.map { ": entry \($0)" } ?? "") + ": \(message)" }
}

/// Reads recordings: a Lookout log (its summary records, bodies from their capture files) or a
/// HAR 1.2 file from any tool. Lookout's own pages and blind tunnels are left out.
public enum RecordingReader {
    /// The largest HAR file read (HAR keeps bodies inline, so it is parsed whole).
    public static let maximumHARBytes = 512 << 20

    public static func read(_ path: String) throws(RecordingError) -> [RecordedExchange] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw RecordingError(file: path, entry: nil, message: "cannot be read")
        }
        let start = (try? handle.read(upToCount: 4096)) ?? Data()
        try? handle.close()
        let prefix = String(decoding: start.prefix(4096), as: UTF8.self)
        let firstLine = prefix.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        // A log's first line is a whole record; a HAR file is one object beginning with "log".
        if firstLine.hasPrefix("{") && firstLine.contains("\"v\":") { return try readLog(path) }
        return try readHAR(path)
    }

    private static func readLog(_ path: String) throws(RecordingError) -> [RecordedExchange] {
        var exchanges: [RecordedExchange] = []
        var problem: RecordingError?
        var line = 0
        do {
            try LogLineReader(path: path).forEachLine { bytes in
                line += 1
                guard let record = LogRecord(bytes) else {
                    problem = RecordingError(file: path, entry: line, message: "line \(line) is not a JSON object")
                    return false
                }
                guard record.string("event") == "exchange", let kind = record.string("kind"), kind == "http" || kind == "intercepted",
                      let method = record.string("method"), let url = record.string("mapped_from") ?? record.string("url")
                else { return true }
                let responseHeaders = record.stringMembers("response_headers")
                var body = RecordedBody.none
                if let file = record.string("capture", "response") {
                    body = .file(path: located(file, beside: path),
                                 contentEncoding: responseHeaders.first { $0.0 == "content-encoding" }?.1)
                } else if let size = record.number("bytes", "response_body") {
                    body = .sizeOnly(LogRecord.wholeNumber(size) ?? 0)
                }
                var exchange = RecordedExchange(
                    index: exchanges.count, method: method, url: url, status: record.number("status").flatMap(LogRecord.wholeNumber),
                    requestHeaders: record.stringMembers("request_headers").map { ($0.0, $0.1) },
                    responseHeaders: responseHeaders.map { ($0.0, $0.1) }, responseBody: body,
                    totalMilliseconds: record.number("timings_ms", "total"))
                if let file = record.string("capture", "request") {
                    exchange.requestBody = .file(path: located(file, beside: path), contentEncoding: nil)
                } else if let size = record.number("bytes", "request_body") {
                    exchange.requestBody = size == 0 ? .none : .sizeOnly(LogRecord.wholeNumber(size) ?? 0)
                }
                exchange.waitMilliseconds = record.number("timings_ms", "wait").flatMap { $0 >= 0 ? $0 : nil }
                // `ts` is when the exchange finished; it started `timings_ms.total` before.
                if let end = record.string("ts").flatMap(LogTime.timestamp) {
                    exchange.endMicroseconds = end
                    exchange.startMicroseconds = exchange.totalMilliseconds.map { end - Int64(($0 * 1000).rounded()) }
                }
                exchange.connection = record.number("conn").map(LogRecord.integerText)
                exchange.isHTTP2 = record.string("http_version")?.hasPrefix("HTTP/2") ?? false
                exchange.file = path
                exchanges.append(exchange)
                return true
            }
        } catch {
            throw RecordingError(file: path, entry: nil, message: error.description)
        }
        if let problem { throw problem }
        return exchanges
    }

    /// A capture file named by a log: a relative path is taken from the log's folder, and a file
    /// no longer where the log says is looked for in a `capture` folder beside the log, or beside
    /// it — so a recording moves as one folder (a test fixture).
    static func located(_ file: String, beside log: String) -> String {
        let folder = (log as NSString).deletingLastPathComponent
        let base = folder.isEmpty ? "." : folder
        guard file.hasPrefix("/") else { return base + "/" + file }
        if FileManager.default.fileExists(atPath: file) { return file }
        let name = (file as NSString).lastPathComponent
        return [base + "/capture/" + name, base + "/" + name].first { FileManager.default.fileExists(atPath: $0) } ?? file
    }

    private static func readHAR(_ path: String) throws(RecordingError) -> [RecordedExchange] {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size <= maximumHARBytes else {
            throw RecordingError(file: path, entry: nil, message: "a HAR file over \(maximumHARBytes >> 20) MiB is not read")
        }
        guard let bytes = readWhole(path, limit: maximumHARBytes),
              let root = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw RecordingError(file: path, entry: nil, message: "is neither a Lookout log nor a HAR file (JSON with log.entries)")
        }
        guard let log = root["log"] as? [String: Any], let entries = log["entries"] as? [[String: Any]] else {
            throw RecordingError(file: path, entry: nil, message: "has no log.entries (not HAR 1.2)")
        }
        var exchanges: [RecordedExchange] = []
        for (number, entry) in entries.enumerated() {
            guard let request = entry["request"] as? [String: Any], let method = request["method"] as? String,
                  let url = request["url"] as? String else {
                throw RecordingError(file: path, entry: number, message: "has no request.method and request.url")
            }
            let response = entry["response"] as? [String: Any] ?? [:]
            let status = (response["status"] as? NSNumber)?.intValue
            var exchange = RecordedExchange(
                index: exchanges.count, method: method, url: url, status: status == 0 ? nil : status,
                requestHeaders: headers(request["headers"]), responseHeaders: headers(response["headers"]),
                responseBody: harBody(response["content"] as? [String: Any]),
                totalMilliseconds: (entry["time"] as? NSNumber)?.doubleValue)
            if let post = request["postData"] as? [String: Any], let text = post["text"] as? String {
                exchange.requestBody = (post["encoding"] as? String) == "base64"
                    ? Data(base64Encoded: text).map { .bytes(Array($0)) } ?? .bytes(Array(text.utf8)) : .bytes(Array(text.utf8))
            }
            if let wait = ((entry["timings"] as? [String: Any])?["wait"] as? NSNumber)?.doubleValue, wait >= 0 {
                exchange.waitMilliseconds = wait
            }
            if let started = (entry["startedDateTime"] as? String).flatMap(LogTime.timestamp) {
                exchange.startMicroseconds = started
                exchange.endMicroseconds = exchange.totalMilliseconds.map { started + Int64(($0 * 1000).rounded()) } ?? started
            }
            exchange.connection = (entry["connection"] as? String).flatMap { connectionID($0, url: url) }
            exchange.isHTTP2 = ((response["httpVersion"] ?? request["httpVersion"]) as? String).map(isMultiplexed) ?? false
            exchange.file = path
            exchanges.append(exchange)
        }
        return exchanges
    }

    /// A HAR entry's `connection` as a connection id. Chromium writes its socket's id; Firefox
    /// writes the server's port, which many connections share, so a value equal to the URL's port
    /// names no connection.
    static func connectionID(_ text: String, url: String) -> String? {
        guard let parts = URLComponents(string: url) else { return text }
        let port = parts.port ?? (parts.scheme?.lowercased() == "https" ? 443 : 80)
        return text == String(port) ? nil : text
    }

    /// HTTP/2 and HTTP/3 carry overlapping streams on one connection: HAR writers name them
    /// "HTTP/2", "HTTP/2.0", "h2", "h3" or "http/3".
    static func isMultiplexed(_ version: String) -> Bool {
        let lower = version.lowercased()
        return lower.hasPrefix("http/2") || lower.hasPrefix("http/3") || lower == "h2" || lower == "h3" || lower.hasPrefix("h3-")
    }

    /// The file's bytes, up to `limit`. Read here rather than with `FileManager.contents(atPath:)`,
    /// which leaks its buffer for an empty file.
    private static func readWhole(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= limit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return n == 0 ? bytes : nil }
            bytes += chunk[..<n]
        }
        return nil
    }

    private static func headers(_ value: Any?) -> [(name: String, value: String)] {
        ((value as? [[String: Any]]) ?? []).compactMap { header in
            guard let name = header["name"] as? String, let value = header["value"] as? String else { return nil }
            return (name.lowercased(), value)
        }
    }

    private static func harBody(_ content: [String: Any]?) -> RecordedBody {
        guard let content, let text = content["text"] as? String else {
            return (content?["size"] as? NSNumber).map { .sizeOnly($0.intValue) } ?? .none
        }
        let encoding = (content["encoding"] as? String) ?? (content["_encoding"] as? String)
        if encoding == "base64", let data = Data(base64Encoded: text) { return .bytes(Array(data)) }
        let utf8 = Array(text.utf8)
        // Some tools (mitmproxy) write a body that is not UTF-8 as text decoded as Latin-1, one
        // character per byte: `size` (the body's length in bytes) tells the two apart.
        if let size = (content["size"] as? NSNumber)?.intValue, utf8.count != size,
           text.unicodeScalars.allSatisfy({ $0.value <= 0xFF }) {
            let latin1 = text.unicodeScalars.map { UInt8($0.value) }
            if latin1.count == size { return .bytes(latin1) }
        }
        return .bytes(utf8)
    }
}

extension RecordedExchange: FilterSubject {
    /// A recorded exchange for `lookout replay --filter`: host, method, URL, status and fields.
    public func filterText(_ field: LogFilter.Field) -> String? {
        switch field {
        case .host: return LogRecord.host(of: url)
        case .method: return method
        case .url: return url
        default: return nil
        }
    }

    public func filterNumber(_ field: LogFilter.Field) -> Double? {
        switch field {
        case .status: return status.map(Double.init)
        case .id: return Double(index)
        case .phase("total"): return totalMilliseconds
        default: return nil
        }
    }

    public func filterHeaderValues(_ name: String) -> [String] {
        (requestHeaders + responseHeaders).filter { $0.name.lowercased() == name }.map(\.value)
    }

    public var filterModified: Bool { false }
}
