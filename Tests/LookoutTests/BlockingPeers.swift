import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A loopback origin on plain blocking sockets, answering each connection with one canned response.
final class BlockingOrigin: @unchecked Sendable {  // `fd` is written once in init
    let port: Int
    private let fd: Int32
    /// The request heads it read, in order.
    let received = Mutex<[String]>([])

    init(response: String) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(bound == 0 && listen(fd, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let bytes = Array(response.utf8)
        DispatchQueue.global().async { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    // Closed here, not in stop(): the number must not be reused while this
                    // thread may still call accept on it.
                    close(fd)
                    return
                }
                let head = readHead(client)
                received.withLock { $0.append(head) }
                _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(client)
            }
        }
    }

    /// Wakes the accept loop, which then closes the socket.
    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// 127.0.0.1:`port` for the socket calls.
func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    return address
}

/// A loopback port nobody listens on (bound, read, closed at once).
func unusedLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Int32 in
            bind(fd, sa, length)
            return getsockname(fd, sa, &length)
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Reads until the end of an HTTP head (or EOF).
func readHead(_ fd: Int32) -> String {
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        data += buffer[0..<n]
        if data.count >= 4, Array(data.suffix(4)) == Array("\r\n\r\n".utf8) { break }
    }
    return String(decoding: data, as: UTF8.self)
}

/// Sends `request` to 127.0.0.1:`port` and returns everything read until the server closes.
func blockingExchange(port: Int, request: String) -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = loopbackAddress(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return "" }
    let bytes = Array(request.utf8)
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        data += buffer[0..<n]
    }
    return String(decoding: data, as: UTF8.self)
}
