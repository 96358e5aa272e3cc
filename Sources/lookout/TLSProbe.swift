import LookoutTLS
#if canImport(Glibc)
import Glibc
#endif

/// Connects to a TLS server with blocking sockets and returns what it presented. For
/// `lookout pin`, a one-shot command: no event loop, no trust evaluation (that is the point —
/// it shows a chain so the user can decide what to pin).
struct TLSProbe {
    struct Result {
        let address: String
        let version: String
        let cipher: String
        let chain: [Certificate]
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let host: String
    let port: Int
    let timeout: Double

    func run() throws(Failure) -> Result {
        let (fd, address) = try connect()
        defer { close(fd) }
        let connection: TLSConnection
        do {
            let engine = try TLSEngine(configuration: .client())
            connection = try engine.makeClientConnection(serverName: host)
        } catch {
            throw Failure(description: "cannot set up TLS: \(error)")
        }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let status = connection.handshake()
            try send(connection.takeCiphertext(), on: fd)
            switch status {
            case .complete:
                return Result(address: address, version: connection.negotiatedProtocolVersion ?? "?",
                              cipher: connection.cipherSuite ?? "?", chain: connection.peerCertificateChain)
            case .failed(let error):
                throw Failure(description: "TLS handshake with \(address) failed: \(error)")
            case .wantIO:
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    connection.receiveCiphertext(Array(buffer[..<count]))
                } else if count == 0 {
                    throw Failure(description: "\(address) closed the connection during the TLS handshake")
                } else {
                    throw Failure(description: errno == EAGAIN || errno == EWOULDBLOCK
                        ? "\(address) did not finish the TLS handshake within \(timeout) s"
                        : "reading from \(address): \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    private func send(_ bytes: [UInt8], on fd: Int32) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "sending to \(host): \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Tries every address of `host` in turn; each connect bounded by `timeout`.
    private func connect() throws(Failure) -> (Int32, String) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let lookup = getaddrinfo(host, String(port), &hints, &list)
        guard lookup == 0, let first = list else {
            throw Failure(description: "cannot resolve \(host): \(String(cString: gai_strerror(lookup)))")
        }
        defer { freeaddrinfo(list) }
        var problems: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let address = Self.describe(info.pointee.ai_addr, port: port)
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { continue }
            var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                return (fd, address)
            }
            problems.append("\(address): \(errno == EINPROGRESS ? "timed out" : String(cString: strerror(errno)))")
            close(fd)
        }
        throw Failure(description: "cannot connect to \(host):\(port): \(problems.joined(separator: "; "))")
    }

    private static func describe(_ address: UnsafeMutablePointer<sockaddr>?, port: Int) -> String {
        guard let address else { return "?" }
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, address.pointee.sa_family == AF_INET6 ? socklen_t(MemoryLayout<sockaddr_in6>.size)
                                                                       : socklen_t(MemoryLayout<sockaddr_in>.size),
                          &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { return "?" }
        let host = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
