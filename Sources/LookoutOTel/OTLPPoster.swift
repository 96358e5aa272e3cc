#if canImport(Glibc)
import Glibc
#endif
import LookoutModel
import LookoutTLS

/// One OTLP/HTTP POST on a blocking socket of the exporter's own thread, bounded by a deadline
/// (`otel.timeout_ms`) from connect to the last byte of the answer. A connection per request:
/// exports come at most a few a second, and a Collector restarting never leaves a stale one.
struct OTLPPoster {
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

    let endpoint: OTLPEndpoint
    let headers: [(String, String)]
    let timeoutMilliseconds: Int
    /// For an https endpoint: the TLS engine, and how the Collector's certificate is judged (the
    /// roots of `trust.system_roots` and `trust.ca_files`, its name checked).
    var tls: (engine: TLSEngine, evaluator: DefaultTrustEvaluator)?

    func post(path: String, contentType: String, gzip: Bool, body: [UInt8]) -> Result<Answer, Failure> {
        let deadline = Instant.now().nanoseconds + UInt64(timeoutMilliseconds) * 1_000_000
        let fd: Int32
        switch connect(deadline: deadline) {
        case .success(let socket): fd = socket
        case .failure(let failure): return .failure(failure)
        }
        defer { close(fd) }
        var channel = Channel(fd: fd, deadline: deadline, tls: nil)
        if endpoint.isSecure {
            guard let tls else { return .failure(.connect("no TLS set up for \(endpoint.host)")) }
            if let failure = channel.handshake(engine: tls.engine, evaluator: tls.evaluator, host: endpoint.host) {
                return .failure(failure)
            }
        }
        let hostField = endpoint.host.contains(":") ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)"
        var head = "POST \(path) HTTP/1.1\r\nHost: \(hostField)\r\nContent-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\nConnection: close\r\nUser-Agent: lookout/\(LookoutVersion.string)\r\n"
        if gzip { head += "Content-Encoding: gzip\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        if let failure = channel.send(Array(head.utf8) + body) { return .failure(failure) }
        return channel.receiveAll().flatMap(Self.parse)
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

    static func parse(_ data: [UInt8]) -> Result<Answer, Failure> {
        guard let end = data.firstRange(of: [13, 10, 13, 10]) else { return .failure(.malformed("the Collector's answer has no complete head")) }
        let lines = String(decoding: data[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            return .failure(.malformed("the Collector's answer does not start with a status line"))
        }
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
        return .success(Answer(status: status, retryAfter: retryAfter, body: body))
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
