#if canImport(Glibc)
import Glibc
#endif
import LookoutModel
import LookoutTLS

/// OTLP/HTTP POSTs from the exporter's own thread on a blocking socket, each bounded by a deadline
/// (`otel.timeout_ms`) from its first byte sent (or connect) to the last byte of the answer. The
/// connection is kept for the next batch (HTTP/1.1 persistence, RFC 9112 §9.3): a connect, and
/// for an https Collector a TLS handshake, per batch cost more than the batch's own sending. A
/// kept connection the Collector has closed meanwhile is found when nothing of the answer
/// arrives, and the batch is sent again once on a new one (RFC 9112 §9.3.1 allows the retry; a
/// Collector takes a repeated batch, as OTLP's own retries may repeat one).
///
/// `@unchecked Sendable`: used by the exporter's thread only.
final class OTLPPoster: @unchecked Sendable {
    struct Answer {
        var status: Int
        var retryAfter: Double?
        var body: [UInt8]
    }

    enum Failure: Error, CustomStringConvertible {
        case resolve(String), connect(String), timedOut(String), io(String), malformed(String)
        var description: String {
            switch self {
            case .resolve(let m), .connect(let m), .timedOut(let m), .io(let m), .malformed(let m): m
            }
        }
    }

    /// How one request on one connection ended.
    private enum Outcome {
        case answered(Answer, keep: Bool)
        /// Nothing of an answer came: the connection was found closed (or failed) before one.
        case unanswered(Failure)
        case failed(Failure)
    }

    let endpoint: OTLPEndpoint
    let headers: [(String, String)]
    let timeoutMilliseconds: Int
    /// For an https endpoint: the TLS engine, and how the Collector's certificate is judged (the
    /// roots of `trust.system_roots` and `trust.ca_files`, its name checked).
    let tls: (engine: TLSEngine, evaluator: DefaultTrustEvaluator)?
    /// The connection the last answer left open.
    private var kept: Channel?
    /// The largest answer read (a Collector answers a few bytes, or a partial-success message).
    static let maximumAnswerBytes = 4 << 20

    init(endpoint: OTLPEndpoint, headers: [(String, String)], timeoutMilliseconds: Int,
         tls: (engine: TLSEngine, evaluator: DefaultTrustEvaluator)?) {
        self.endpoint = endpoint
        self.headers = headers
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls
    }

    deinit {
        if let kept { close(kept.fd) }
    }

    func post(path: String, contentType: String, gzip: Bool, body: [UInt8]) -> Result<Answer, Failure> {
        let deadline = Instant.now().nanoseconds + UInt64(timeoutMilliseconds) * 1_000_000
        let request = requestBytes(path: path, contentType: contentType, gzip: gzip, body: body)
        if var channel = kept {
            kept = nil
            channel.deadline = deadline
            switch exchange(&channel, request) {
            case .answered(let answer, let keep):
                if keep { kept = channel } else { close(channel.fd) }
                return .success(answer)
            case .unanswered:
                close(channel.fd)  // closed by the Collector while idle: a new connection below
            case .failed(let failure):
                close(channel.fd)
                return .failure(failure)
            }
        }
        var channel: Channel
        switch open(deadline: deadline) {
        case .success(let opened): channel = opened
        case .failure(let failure): return .failure(failure)
        }
        switch exchange(&channel, request) {
        case .answered(let answer, let keep):
            if keep { kept = channel } else { close(channel.fd) }
            return .success(answer)
        case .unanswered(let failure), .failed(let failure):
            close(channel.fd)
            return .failure(failure)
        }
    }

    /// A new connection, through TLS for an https endpoint.
    private func open(deadline: UInt64) -> Result<Channel, Failure> {
        let fd: Int32
        switch connect(deadline: deadline) {
        case .success(let socket): fd = socket
        case .failure(let failure): return .failure(failure)
        }
        var channel = Channel(fd: fd, deadline: deadline, tls: nil)
        if endpoint.isSecure {
            guard let tls else {
                close(fd)
                return .failure(.connect("no TLS set up for \(endpoint.host)"))
            }
            if let failure = channel.handshake(engine: tls.engine, evaluator: tls.evaluator, host: endpoint.host) {
                close(fd)
                return .failure(failure)
            }
        }
        return .success(channel)
    }

    private func requestBytes(path: String, contentType: String, gzip: Bool, body: [UInt8]) -> [UInt8] {
        let hostField = endpoint.host.contains(":") ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)"
        var head = "POST \(path) HTTP/1.1\r\nHost: \(hostField)\r\nContent-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\nUser-Agent: lookout/\(LookoutVersion.string)\r\n"
        if gzip { head += "Content-Encoding: gzip\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        var request = Array(head.utf8)
        request += body
        return request
    }

    /// Sends `request` and reads its answer: a head, then a body framed by Content-Length, by
    /// chunks, or by the close (RFC 9112 §6.3).
    private func exchange(_ channel: inout Channel, _ request: [UInt8]) -> Outcome {
        if let failure = channel.send(request) { return .unanswered(failure) }
        var data: [UInt8] = []
        var framing: (headEnd: Int, length: AnswerLength, keep: Bool)?
        while true {
            if framing == nil, let end = data.firstRange(of: [13, 10, 13, 10]) {
                framing = Self.framing(head: data[..<end.lowerBound], headEnd: end.upperBound)
            }
            if let framing, let end = Self.answerEnd(data, headEnd: framing.headEnd, length: framing.length) {
                return Self.outcome(Array(data[..<end]), keep: framing.keep)
            }
            guard data.count < Self.maximumAnswerBytes else { return .failed(.malformed("the Collector's answer is over 4 MiB")) }
            switch channel.readSome(into: &data) {
            case .success(true):
                continue
            case .success(false):
                if data.isEmpty { return .unanswered(.io("the Collector closed the connection without answering")) }
                guard let framing, case .untilClose = framing.length else {
                    return .failed(.io("the Collector closed the connection in the middle of its answer"))
                }
                return Self.outcome(data, keep: false)
            case .failure(let failure):
                return data.isEmpty ? .unanswered(failure) : .failed(failure)
            }
        }
    }

    private static func outcome(_ answer: [UInt8], keep: Bool) -> Outcome {
        guard let parsed = parse(answer) else { return .failed(.malformed("the Collector's answer does not start with a status line")) }
        return .answered(parsed, keep: keep)
    }

    enum AnswerLength: Equatable {
        case bytes(Int), chunked, untilClose
    }

    /// How the answer whose head is `head` ends, and whether its connection can be kept.
    static func framing(head: ArraySlice<UInt8>, headEnd: Int) -> (headEnd: Int, length: AnswerLength, keep: Bool) {
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n")
        var length = AnswerLength.untilClose
        var keep = lines.first?.hasPrefix("HTTP/1.1") ?? false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmedOfWhitespace.lowercased()
            if name == "content-length", length == .untilClose, let count = Int(value), count >= 0 { length = .bytes(count) }
            if name == "transfer-encoding", value.hasSuffix("chunked") { length = .chunked }  // wins over a length (§6.3)
            if name == "connection", value.split(separator: ",").contains(where: { $0.trimmedOfWhitespace == "close" }) {
                keep = false
            }
        }
        if length == .untilClose { keep = false }
        return (headEnd, length, keep)
    }

    /// Where the answer ends in `data`, or nil while more is to come.
    static func answerEnd(_ data: [UInt8], headEnd: Int, length: AnswerLength) -> Int? {
        switch length {
        case .bytes(let count): return data.count >= headEnd + count ? headEnd + count : nil
        case .untilClose: return nil
        case .chunked:
            // chunk-size [ext] CRLF data CRLF ... 0 CRLF [trailers] CRLF (RFC 9112 §7.1)
            var index = headEnd
            while let lineEnd = data[index...].firstRange(of: [13, 10]) {
                let sizeText = String(decoding: data[index..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
                guard let size = Int(sizeText.trimmedOfWhitespace, radix: 16), size >= 0 else { return nil }
                if size == 0 {
                    var at = lineEnd.upperBound
                    while let trailerEnd = data[at...].firstRange(of: [13, 10]) {
                        if trailerEnd.lowerBound == at { return trailerEnd.upperBound }
                        at = trailerEnd.upperBound
                    }
                    return nil
                }
                index = lineEnd.upperBound + size + 2
                guard index <= data.count else { return nil }
            }
            return nil
        }
    }

    private func connect(deadline: UInt64) -> Result<Int32, Failure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(endpoint.host, String(endpoint.port), &hints, &list) == 0, let first = list else {
            return .failure(.resolve("cannot resolve \(endpoint.host)"))
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address for \(endpoint.host)"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                if Channel.wait(fd, Int16(POLLOUT), deadline: deadline) {
                    var code: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
                    if code == 0 { return .success(fd) }
                    lastError = "cannot connect to \(endpoint.host):\(endpoint.port): \(String(cString: strerror(code)))"
                } else {
                    lastError = "connecting to \(endpoint.host):\(endpoint.port) timed out"
                }
            } else {
                lastError = "cannot connect to \(endpoint.host):\(endpoint.port): \(String(cString: strerror(errno)))"
            }
            close(fd)
        }
        return .failure(.connect(lastError))
    }

    /// The answer in `data` (one whole answer); nil when it does not start with a status line.
    static func parse(_ data: [UInt8]) -> Answer? {
        guard let end = data.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let lines = String(decoding: data[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else { return nil }
        var retryAfter: Double?
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            if name == "retry-after" { retryAfter = Double(value) }  // seconds; an HTTP date is taken as none
            if name == "transfer-encoding", value.lowercased().contains("chunked") { chunked = true }
        }
        var body = Array(data[end.upperBound...])
        if chunked { body = dechunked(body) }
        return Answer(status: status, retryAfter: retryAfter, body: body)
    }

    private static func dechunked(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < data.count, let lineEnd = data[index...].firstRange(of: [13, 10]) {
            let sizeText = String(decoding: data[index..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16), size > 0, lineEnd.upperBound + size <= data.count else { break }
            out += data[lineEnd.upperBound..<(lineEnd.upperBound + size)]
            index = lineEnd.upperBound + size + 2
        }
        return out
    }
}

extension Substring {
    /// Without the spaces and tabs around it (optional whitespace, RFC 9110 §5.6.3).
    fileprivate var trimmedOfWhitespace: Substring {
        let isText: (Character) -> Bool = { $0 != " " && $0 != "\t" }
        guard let first = firstIndex(where: isText), let last = lastIndex(where: isText) else { return "" }
        return self[first...last]
    }
}
