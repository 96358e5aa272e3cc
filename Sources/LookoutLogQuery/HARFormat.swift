#if canImport(Glibc)
import Glibc
#endif
import LookoutHTTP

/// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) from summary records and captured
/// bodies. What HAR has no field for goes under `_lookout`.
public enum HARFormat {
    /// Bodies larger than this are not inlined (the entry says so in `_lookout`).
    public static let maxInlineBytes = 16 << 20

    public static func header(creatorVersion: String) -> String {
        #"{"log":{"version":"1.2","creator":{"name":"Lookout","version":"\#(creatorVersion)"},"pages":[],"entries":["#
    }

    public static let footer = "\n]}}\n"

    /// One entry (with a leading comma after the first).
    public static func entry(_ r: LogRecord, index: Int) -> String {
        var j = JSONTextWriter()
        j.open()
        let total = r.number("timings_ms", "total") ?? 0
        if let ts = r.string("ts").flatMap(LogTime.timestamp) {
            j.key("startedDateTime"); j.string(isoTime(ts &- Int64(LogRecord.wholeNumber(total * 1000) ?? 0)))
        }
        // HAR timings: connect includes ssl; -1 where the phase did not happen — except send, wait
        // and receive, which HAR 1.2 requires to be non-negative (0 for an admin page's, say).
        func phase(_ name: String) -> Double {
            let floor: Double = ["send", "wait", "receive"].contains(name) ? 0 : -1
            return max(floor, r.number("timings_ms", name) ?? floor)
        }
        let tls = phase("tls"), tcp = phase("connect")
        let connect = tcp < 0 ? -1 : tcp + max(0, tls)
        let timings: [(String, Double)] = [("blocked", phase("blocked")), ("dns", phase("dns")), ("connect", connect),
                                           ("send", phase("send")), ("wait", phase("wait")), ("receive", phase("receive")),
                                           ("ssl", tls)]
        j.key("time"); j.number(timings.filter { $0.0 != "ssl" && $0.1 >= 0 }.reduce(0) { $0 + $1.1 })

        let requestHeaders = r.stringMembers("request_headers")
        let responseHeaders = r.stringMembers("response_headers")
        let url = r.string("url") ?? ""
        let httpVersion = r.string("http_version") ?? "HTTP/1.1"

        j.key("request"); request(&j, r, url: url, httpVersion: httpVersion, headers: requestHeaders)

        j.key("response"); j.open()
        j.key("status"); j.number(r.number("status") ?? 0)
        j.key("statusText"); j.string("")
        j.key("httpVersion"); j.string(r.number("status") == nil ? "" : httpVersion)
        j.key("cookies"); pairs(&j, responseHeaders.filter { $0.0 == "set-cookie" }.flatMap { cookies($0.1, separator: nil) })
        j.key("headers"); pairs(&j, responseHeaders)
        j.key("content"); content(&j, r, responseHeaders)
        j.key("redirectURL"); j.string(responseHeaders.first { $0.0 == "location" }?.1 ?? "")
        j.key("headersSize"); j.number(r.number("bytes", "response_headers") ?? -1)
        j.key("bodySize"); j.number(r.number("bytes", "response_body") ?? -1)
        j.close()

        j.key("cache"); j.raw("{}")
        j.key("timings"); j.open()
        for (name, value) in timings { j.key(name); j.number(value) }
        j.close()
        if let address = r.string("upstream", "address") {
            j.key("serverIPAddress"); j.string(address.hasPrefix("[") ? String(address.dropFirst().prefix { $0 != "]" })
                                                                    : String(address.prefix { $0 != ":" }))
        }
        if let conn = r.number("conn") { j.key("connection"); j.string(LogRecord.integerText(conn)) }

        j.key("_lookout"); lookoutExtras(&j, r, total: total)
        j.close()
        return (index == 0 ? "\n" : ",\n") + j.text
    }

    /// HAR's `request`: method, URL, version, cookies, headers, query, a captured body, sizes.
    private static func request(_ j: inout JSONTextWriter, _ r: LogRecord, url: String, httpVersion: String,
                                headers requestHeaders: [(String, String)]) {
        j.open()
        j.key("method"); j.string(r.string("method") ?? "")
        j.key("url"); j.string(url)
        j.key("httpVersion"); j.string(httpVersion)
        j.key("cookies"); pairs(&j, cookies(requestHeaders.first { $0.0 == "cookie" }?.1, separator: ";"))
        j.key("headers"); pairs(&j, requestHeaders)
        j.key("queryString"); pairs(&j, queryString(url))
        if let path = r.string("capture", "request"), let body = readFile(path) {
            j.key("postData"); j.open()
            j.key("mimeType"); j.string(requestHeaders.first { $0.0 == "content-type" }?.1 ?? "")
            j.key("params"); j.raw("[]")
            if let text = String(validating: body, as: UTF8.self) {
                j.key("text"); j.string(text)
            } else {
                j.key("text"); j.string(Base64.encode(body))
                j.key("_encoding"); j.string("base64")
            }
            j.close()
        }
        j.key("headersSize"); j.number(r.number("bytes", "request_headers") ?? -1)
        j.key("bodySize"); j.number(r.number("bytes", "request_body") ?? -1)
        j.close()
    }

    /// What HAR has no field for, copied from the record as it was written.
    private static func lookoutExtras(_ j: inout JSONTextWriter, _ r: LogRecord, total: Double) {
        j.open()
        for key in ["id", "kind", "client", "attempts", "redirects", "final_url", "upstream", "transactions", "cache",
                    "error", "capture", "upgrade"] {
            if let span = r.span([key]) { j.key(key); j.raw(String(decoding: UnsafeBufferPointer(rebasing: r.bytes[span.start..<span.end]), as: UTF8.self)) }
        }
        if let span = r.span(["upstream", "tls", "trust"]) {
            j.key("trust"); j.raw(String(decoding: UnsafeBufferPointer(rebasing: r.bytes[span.start..<span.end]), as: UTF8.self))
        }
        j.key("total_ms"); j.number(total)
        j.close()
    }

    private static func content(_ j: inout JSONTextWriter, _ r: LogRecord, _ headers: [(String, String)]) {
        let mimeType = headers.first { $0.0 == "content-type" }?.1 ?? "x-unknown"
        j.open()
        j.key("mimeType"); j.string(mimeType)
        guard let path = r.string("capture", "response"), let raw = readFile(path) else {
            j.key("size"); j.number(r.number("bytes", "response_body") ?? 0)
            j.close()
            return
        }
        let coding = headers.first { $0.0 == "content-encoding" }?.1
        var body = raw
        switch ContentDecoding.decode(raw, contentEncoding: coding) {
        case .decoded(let decoded):
            body = decoded
            if decoded.count != raw.count || coding != nil { j.key("compression"); j.number(Double(decoded.count - raw.count)) }
        case .unsupported(let name):
            j.key("_undecoded"); j.string("content coding \(name) not decoded: the text is the body as received")
        case .corrupt(let name):
            j.key("_undecoded"); j.string("the \(name) body did not decode: the text is the body as received")
        case .tooLarge:
            j.key("_undecoded"); j.string("decoded body over \(maxInlineBytes) bytes: the text is the body as received")
        }
        j.key("size"); j.number(Double(body.count))
        let textual = mimeType.hasPrefix("text/") || ["json", "xml", "javascript", "x-www-form-urlencoded"].contains { mimeType.contains($0) }
        if textual, let text = String(validating: body, as: UTF8.self) {
            j.key("text"); j.string(text)
        } else {
            j.key("text"); j.string(Base64.encode(body))
            j.key("encoding"); j.string("base64")
        }
        j.close()
    }

    private static func pairs(_ j: inout JSONTextWriter, _ list: [(String, String)]) {
        j.raw("[")
        for (index, (name, value)) in list.enumerated() {
            if index > 0 { j.raw(",") }
            j.raw(#"{"name":"#); j.rawString(name); j.raw(#","value":"#); j.rawString(value); j.raw("}")
        }
        j.raw("]")
    }

    /// `a=b; c=d` (a Cookie field), or the name=value of one Set-Cookie (separator nil).
    static func cookies(_ field: String?, separator: Character?) -> [(String, String)] {
        guard let field else { return [] }
        let parts = separator.map { field.split(separator: $0).map(String.init) } ?? [String(field.prefix { $0 != ";" })]
        return parts.compactMap { part in
            let trimmed = part.trimmingOWS()
            guard let eq = trimmed.firstIndex(of: "=") else { return nil }
            return (String(trimmed[..<eq]), String(trimmed[trimmed.index(after: eq)...]))
        }
    }

    static func queryString(_ url: String) -> [(String, String)] {
        guard let question = url.firstIndex(of: "?") else { return [] }
        let query = url[url.index(after: question)...].prefix { $0 != "#" }
        return FormURLEncoding.pairs(query, lenient: true).map { ($0.name, $0.value) }
    }

    static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < maxInlineBytes {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        return bytes
    }

    /// `2026-11-24T09:30:00.123Z` for microseconds since 1970.
    static func isoTime(_ micros: Int64) -> String {
        // Years 1 to 9999 (what the format can say): a record's times are input, and arithmetic
        // on one far outside them must not overflow.
        let micros = min(max(micros, -62_135_596_800_000_000), 253_402_300_799_999_999)
        let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let ofDay = Int(seconds - days * 86_400)
        let (year, month, day) = HTTPDate.civil(fromDays: days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int((micros - seconds * 1_000_000) / 1000)
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(HTTPDate.yearText(year))-\(two(month))-\(two(day))T\(two(ofDay / 3600)):\(two(ofDay / 60 % 60)):\(two(ofDay % 60)).\(ms)Z"
    }
}

/// A small JSON writer for HAR entries (commas placed automatically inside objects).
struct JSONTextWriter {
    private(set) var text = ""
    private var needsComma = [false]

    mutating func open() { text += "{"; needsComma.append(false) }
    mutating func close() { text += "}"; needsComma.removeLast() }
    mutating func key(_ name: String) {
        if needsComma[needsComma.count - 1] { text += "," }
        needsComma[needsComma.count - 1] = true
        rawString(name)
        text += ":"
    }
    mutating func raw(_ json: String) { text += json }
    mutating func string(_ value: String) { rawString(value) }
    mutating func number(_ value: Double) {
        text += value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
    mutating func rawString(_ value: String) {
        text += JSONText.quoted(value)
    }
}

/// RFC 4648 base64 (for binary bodies in HAR).
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
            out += rest == 2 ? [alphabet[Int(n >> 6 & 63)], UInt8(ascii: "=")] : [UInt8(ascii: "="), UInt8(ascii: "=")]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
