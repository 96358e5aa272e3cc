import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One request to a running Lookout's admin endpoint (plain HTTP/1.1 on loopback, `Connection: close`).
struct AdminClient {
    enum Failure: Error {
        /// Nothing listens there: Lookout is not running.
        case notRunning
        case failed(String)
    }

    let host: String
    let port: Int
    /// `user:password` for `Proxy-Authorization` (the first of `auth.users`), if any.
    let credentials: String?
    /// `admin.token`, sent as a bearer token, if the proxy asks for one.
    var token: String? = nil

    func request(_ method: String, _ target: String, body: [UInt8] = []) throws(Failure) -> (status: Int, body: String) {
        let fd = try connect()
        defer { close(fd) }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host.contains(":") ? "[\(host)]" : host):\(port)\r\n"
        head += "Connection: close\r\nContent-Length: \(body.count)\r\n"
        if !body.isEmpty { head += "Content-Type: application/json\r\n" }
        if let credentials { head += "Proxy-Authorization: Basic \(Data(credentials.utf8).base64EncodedString())\r\n" }
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw .failed("sending to \(host):\(port): \(String(cString: strerror(errno)))") }
            offset += n
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .failed("reading from \(host):\(port): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            response += buffer[..<n]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n"),
              let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap({ Int($0) }) else {
            throw .failed("\(host):\(port) did not answer with HTTP")
        }
        return (status, String(text[split.upperBound...]))
    }

    private func connect() throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            throw .failed("\(host) is not an IP address")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .failed(String(cString: strerror(errno))) }
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
        let code = errno
        close(fd)
        if code == ECONNREFUSED { throw .notRunning }
        throw .failed("cannot connect to \(host):\(port): \(String(cString: strerror(code)))")
    }
}
