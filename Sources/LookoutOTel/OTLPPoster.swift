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
    let timeoutMilliseconds: Int
    /// For an https endpoint: the TLS engine, and how the Collector's certificate is judged (the
    /// roots of `trust.system_roots` and `trust.ca_files`, its name checked).
    let tls: (engine: TLSEngine, evaluator: DefaultTrustEvaluator)?
    /// The connection the last answer left open.
    private var kept: Channel?
    /// The largest answer read (a Collector answers a few bytes, or a partial-success message).
    static let maximumAnswerBytes = 4 << 20
    /// The request head's lines after `Content-Length`, the same for every request.
    private let fixedHeaderLines: String
    /// `Host`'s value: an IPv6 literal in brackets (RFC 9110 §7.2, RFC 3986 §3.2.2).
    private let hostField: String

    init(endpoint: OTLPEndpoint, headers: [(String, String)], timeoutMilliseconds: Int,
         tls: (engine: TLSEngine, evaluator: DefaultTrustEvaluator)?) {
        self.endpoint = endpoint
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls
        hostField = endpoint.host.utf8.contains(UInt8(ascii: ":")) ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)"
        fixedHeaderLines = "User-Agent: lookout/\(LookoutVersion.string)\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined()
    }

    deinit {
        if let kept { close(kept.fd) }
    }

    /// POSTs the concatenation of `body`'s parts, sent as they lie.
    func post(path: String, contentType: String, gzip: Bool, body: [UnsafeRawBufferPointer]) -> Result<Answer, Failure> {
        let deadline = Instant.now().nanoseconds + UInt64(timeoutMilliseconds) * 1_000_000
        let head = self.head(path: path, contentType: contentType, gzip: gzip, length: body.reduce(0) { $0 + $1.count })
        return head.withUnsafeBytes { head in post([head] + body, deadline: deadline) }
    }

    private func post(_ request: [UnsafeRawBufferPointer], deadline: UInt64) -> Result<Answer, Failure> {
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

    private func head(path: String, contentType: String, gzip: Bool, length: Int) -> [UInt8] {
        var head = "POST \(path) HTTP/1.1\r\nHost: \(hostField)\r\nContent-Type: \(contentType)\r\nContent-Length: \(length)\r\n"
        if gzip { head += "Content-Encoding: gzip\r\n" }
        head += fixedHeaderLines
        head += "\r\n"
        return Array(head.utf8)
    }

    /// Sends `request` and reads its answer (`AnswerReader`).
    private func exchange(_ channel: inout Channel, _ request: [UnsafeRawBufferPointer]) -> Outcome {
        if let failure = channel.send(request) { return .unanswered(failure) }
        var reader = AnswerReader()
        var data: [UInt8] = []
        do {
            while true {
                data.removeAll(keepingCapacity: true)
                switch channel.readSome(into: &data) {
                case .success(true):
                    if let (answer, keep) = try reader.take(data) { return .answered(answer, keep: keep) }
                case .success(false):
                    if let (answer, keep) = try reader.closed() { return .answered(answer, keep: keep) }
                    return reader.hasStarted
                        ? .failed(.io("the Collector closed the connection in the middle of its answer"))
                        : .unanswered(.io("the Collector closed the connection without answering"))
                case .failure(let failure):
                    return reader.hasStarted ? .failed(failure) : .unanswered(failure)
                }
            }
        } catch {
            return .failed(error)
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
}

