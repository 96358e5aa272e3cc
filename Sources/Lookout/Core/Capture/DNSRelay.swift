import Dispatch
import LookoutIO
#if canImport(Glibc)
import Glibc
#endif

/// Answers the DNS queries of a captured network namespace: each datagram that reaches the socket
/// made inside it goes to `upstream` from Lookout's own namespace, and the answer goes back to the
/// asker. At most `maxInFlight` queries wait at once (more are dropped; the stub resolver asks
/// again), each for at most `timeout` seconds.
final class DNSRelay: @unchecked Sendable {  // confined to `queue`
    static let maxInFlight = 256
    static let timeout = 5.0

    private let socket: Int32
    private let upstream: SocketAddress
    private let queue: DispatchQueue
    private let source: DispatchSourceRead
    private var inFlight: [Int32: DispatchSourceRead] = [:]
    private var isStopped = false

    /// `socket`: a nonblocking UDP socket made in the namespace, bound here to its loopback.
    init(socket: Int32, upstream: SocketAddress, queue: DispatchQueue) throws(SocketError) {
        guard let local = SocketAddress(ip: "127.0.0.1", port: 0),
              local.withSockAddr({ bind(socket, $0, $1) }) == 0 else {
            let error = SocketError("bind the DNS relay")
            close(socket)
            throw error
        }
        self.socket = socket
        self.upstream = upstream
        self.queue = queue
        source = DispatchSource.makeReadSource(fileDescriptor: socket, queue: queue)
        source.setEventHandler { [unowned self] in receiveQueries() }
        source.setCancelHandler { close(socket) }
    }

    /// The port the relay answers on inside the namespace.
    var port: Int { SocketAddress.local(of: socket)?.port ?? 0 }

    func start() { source.activate() }

    func stop() {
        queue.async { [self] in
            guard !isStopped else { return }
            isStopped = true
            source.cancel()
            for waiting in inFlight.values { waiting.cancel() }
            inFlight = [:]
        }
    }

    private func receiveQueries() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !isStopped {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(socket, bytes.baseAddress, bytes.count, 0, $0, &length)
                    }
                }
            }
            guard count > 0 else { return }
            guard inFlight.count < Self.maxInFlight else { continue }
            forward(Array(buffer.prefix(count)), asker: storage, askerLength: length)
        }
    }

    /// One query, on a socket of its own (so the answer is matched by the kernel, not by its id).
    private func forward(_ query: [UInt8], asker: sockaddr_storage, askerLength: socklen_t) {
        let out = Glibc.socket(upstream.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                                                | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard out >= 0 else { return }
        guard upstream.withSockAddr({ connect(out, $0, $1) }) == 0,
              query.withUnsafeBytes({ send(out, $0.baseAddress, $0.count, 0) }) == query.count else {
            close(out)
            return
        }
        let reply = DispatchSource.makeReadSource(fileDescriptor: out, queue: queue)
        let socket = self.socket
        reply.setEventHandler { [unowned self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(out, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                var asker = asker
                _ = withUnsafePointer(to: &asker) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                        buffer.withUnsafeBytes { sendto(socket, $0.baseAddress, count, 0, address, askerLength) }
                    }
                }
            }
            finish(out)
        }
        reply.setCancelHandler { close(out) }
        inFlight[out] = reply
        reply.activate()
        queue.asyncAfter(deadline: .now() + Self.timeout) { [weak self] in self?.finish(out) }
    }

    private func finish(_ fd: Int32) {
        inFlight.removeValue(forKey: fd)?.cancel()
    }
}
