#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import LookoutModel

/// A hook that is an HTTP endpoint: each call is a `POST` of the call's JSON (HTTP/1.1,
/// `Connection: close`), and the reply is the body of a `200` answer. At most `concurrency` calls
/// are open at once, each on a worker with socket timeouts of `timeout_ms`; the call itself ends
/// at `timeout_ms` whatever the worker is doing.
final class HTTPHook: HookTransport, @unchecked Sendable {  // state confined to `queue`
    private let settings: HookSettings
    private let host: String
    private let port: Int
    private let path: String
    private let queue: DispatchQueue
    private var calls: HookCallQueue
    private var stopped = false

    init?(settings: HookSettings, url: String) {
        // http://host[:port][/path]
        let rest = url.dropFirst("http://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        path = slash == rest.endIndex ? "/" : String(rest[slash...])
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            port = after.hasPrefix(":") ? Int(after.dropFirst()) ?? -1 : 80
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? -1
        } else {
            host = String(authority)
            port = 80
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.settings = settings
        queue = DispatchQueue(label: "lookout.hook.\(settings.name)")
        calls = HookCallQueue(concurrency: settings.concurrency, queueLimit: settings.queueLimit)
    }

    func call(_ message: [UInt8], key: HookCallKey, completion: @escaping @Sendable (Result<[UInt8], HookFailure>) -> Void) {
        let call = HookCallQueue.Call(message, key: key, completion: completion)
        queue.async { [self] in
            guard !stopped else { return call.end(.failure(HookFailure("the session is shutting down"))) }
            HookCallQueue.timeout(call, after: settings.timeoutMilliseconds, on: queue)
            switch calls.admit(call) {
            case .send: send(call)
            case .queued: break
            case .refused: call.end(.failure(HookFailure("\(settings.queueLimit) calls wait already (queue_limit)")))
            }
        }
    }

    func stop() {
        queue.async { [self] in
            stopped = true
            calls.failAll(HookFailure("the session is shutting down"))
        }
    }

    private func send(_ call: HookCallQueue.Call) {
        DispatchQueue.global().async { [self] in
            let result = post(call.message)
            queue.async { [self] in
                if let index = calls.inFlight.firstIndex(where: { $0 === call }) { calls.inFlight.remove(at: index) }
                call.end(result)
                for next in calls.next() { send(next) }
            }
        }
    }

    /// One blocking POST on a worker; every socket operation is bounded by `timeout_ms`.
    private func post(_ body: [UInt8]) -> Result<[UInt8], HookFailure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            return .failure(HookFailure("cannot resolve \(host)"))
        }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(HookFailure(String(cString: strerror(errno)))) }
        defer { close(fd) }
        let milliseconds = settings.timeoutMilliseconds
        var limit = timeval(tv_sec: milliseconds / 1000, tv_usec: Int((milliseconds % 1000) * 1000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            return .failure(HookFailure("cannot connect to \(host):\(port): \(String(cString: strerror(errno)))"))
        }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let head = "POST \(path) HTTP/1.1\r\nHost: \(authority)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let request = Array(head.utf8) + body
        var offset = 0
        while offset < request.count {
            let sent = request[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return .failure(HookFailure("sending to \(authority): \(String(cString: strerror(errno)))")) }
            offset += sent
        }
        return readAnswer(fd, from: authority)
    }

    /// The answer's body: as long as its `Content-Length` says, to the end of its chunks, or to
    /// the end of the connection; bounded by the reply limit.
    private func readAnswer(_ fd: Int32, from authority: String) -> Result<[UInt8], HookFailure> {
        let limit = settings.maxReplyBytes + 16 * 1024
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var head: (end: Int, status: Int, length: Int?, chunked: Bool)?
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return .failure(HookFailure("reading from \(authority): \(String(cString: strerror(errno)))")) }
            answer += buffer[..<count]
            guard answer.count <= limit else {
                return .failure(HookFailure("its reply is longer than \(settings.maxReplyBytes) bytes"))
            }
            if head == nil { head = Self.head(of: answer) }
            if let head, head.status != 200 { return .failure(HookFailure("\(authority) answered \(head.status)")) }
            if let head {
                let body = Array(answer[(head.end + 4)...])
                if let length = head.length, body.count >= length { return .success(Array(body.prefix(length))) }
                if head.chunked, let whole = Self.dechunk(body) { return .success(whole) }
                if count == 0 {
                    return head.length == nil && !head.chunked ? .success(body)
                        : .failure(HookFailure("\(authority) closed the connection in the middle of its answer"))
                }
            } else if count == 0 {
                return .failure(HookFailure("\(authority) did not answer with HTTP"))
            }
        }
    }

    /// The status, framing and end of an answer's head, once it is all there.
    private static func head(of answer: [UInt8]) -> (end: Int, status: Int, length: Int?, chunked: Bool)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = answer.indices.first(where: { answer[$0...].starts(with: separator) }) else { return nil }
        let lines = String(decoding: answer[..<end], as: UTF8.self).split(separator: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        let status = parts.count >= 2 && parts[0].hasPrefix("HTTP/1.") ? Int(parts[1]) ?? 0 : 0
        var length: Int?
        var chunked = false
        for line in lines.dropFirst() {
            let pair = line.split(separator: ":", maxSplits: 1)
            guard pair.count == 2 else { continue }
            let name = pair[0].lowercased(), value = pair[1].filter { $0 != " " && $0 != "\t" }
            if name == "content-length" { length = Int(value) }
            if name == "transfer-encoding" && value.lowercased().hasSuffix("chunked") { chunked = true }
        }
        return (end, status, chunked ? nil : length, chunked)
    }

    /// A chunked body (RFC 9112 §7.1) made whole; nil when it is malformed or cut short.
    static func dechunk(_ body: [UInt8]) -> [UInt8]? {
        var result: [UInt8] = []
        var index = 0
        while true {
            guard let lineEnd = body[index...].firstIndex(of: 10) else { return nil }
            let line = String(decoding: body[index..<lineEnd], as: UTF8.self)
            let sizeText = line.split(separator: ";").first.map { $0.filter { $0 != " " && $0 != "\r" && $0 != "\t" } } ?? ""
            guard let size = Int(sizeText, radix: 16), size >= 0 else { return nil }
            index = lineEnd + 1
            if size == 0 { return result }
            guard body.count >= index + size + 2 else { return nil }
            result += body[index..<(index + size)]
            index += size + 2
        }
    }
}
