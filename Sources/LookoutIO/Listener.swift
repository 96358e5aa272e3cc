import CLookoutSocket
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket whose accepted connections are handed to `onAccept` on the accept queue.
public final class Listener: @unchecked Sendable {  // confined to `queue`
    /// The address actually bound (the real port when 0 was asked for).
    public let address: SocketAddress
    /// What accepted connections are told their local address is: the listener's, unless it is
    /// bound to a wildcard (then each connection asks the kernel).
    private let acceptedLocalAddress: SocketAddress?
    private let fd: Int32
    private let queue: DispatchQueue
    private let source: DispatchSourceRead
    private var isStopped = false
    private var isBackingOff = false

    /// Binds and listens. `onAccept` receives each new nonblocking socket, its peer address, and
    /// its local address when the listener's tells it (not bound to a wildcard, nor transparent),
    /// which spares a `getsockname` per connection. A `transparent` listener sets
    /// `IP_TRANSPARENT` where it may (TPROXY rules need it; REDIRECT rules do not), and each of its
    /// connections reads its own local address: under TPROXY it is the original destination.
    public convenience init(address requested: SocketAddress, backlog: Int32 = 1024, transparent: Bool = false, queue: DispatchQueue,
                onAccept: @escaping (Int32, SocketAddress, SocketAddress?) -> Void) throws(SocketError) {
        let fd = try Socket.makeNonBlocking(family: requested.family)
        try self.init(socket: fd, address: requested, backlog: backlog, transparent: transparent, queue: queue,
                      onAccept: onAccept)
    }

    /// Binds and listens on `fd`, a fresh nonblocking socket made elsewhere (in another network
    /// namespace, say); the listener owns it from here, and closes it when it fails.
    public init(socket fd: Int32, address requested: SocketAddress, backlog: Int32 = 1024, transparent: Bool = false,
                queue: DispatchQueue, onAccept: @escaping (Int32, SocketAddress, SocketAddress?) -> Void) throws(SocketError) {
        Socket.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if requested.family == AF_INET6 {
            // Lets "[::]:8080" and "0.0.0.0:8080" be listed side by side.
            Socket.setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1)
        }
        // Without CAP_NET_ADMIN this fails, and only TPROXY needs it: REDIRECT still works.
        if transparent { _ = lookout_set_transparent(fd, requested.family) }
        let bound = requested.withSockAddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let error = SocketError("bind \(requested)")
            Glibc.close(fd)
            throw error
        }
        guard listen(fd, backlog) == 0 else {
            let error = SocketError("listen")
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
        self.queue = queue
        self.address = Socket.localAddress(fd) ?? requested
        self.acceptedLocalAddress = address.isUnspecified || transparent ? nil : address
        self.source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [unowned self] in acceptPending(onAccept) }
        source.setCancelHandler { Glibc.close(fd) }
    }

    /// Starts accepting.
    public func start() {
        source.activate()
    }

    /// Stops accepting and closes the listening socket. Safe to call from any queue.
    public func stop() {
        queue.async { [self] in
            guard !isStopped else { return }
            isStopped = true
            if isBackingOff { source.resume() }
            source.cancel()
        }
    }

    private func acceptPending(_ onAccept: (Int32, SocketAddress, SocketAddress?) -> Void) {
        guard !isStopped else { return }
        // Bounded so one busy listener cannot starve the queue.
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    lookout_accept_nonblocking(fd, $0, &length)
                }
            }
            if client >= 0 {
                onAccept(client, SocketAddress(storage: storage, length: length), acceptedLocalAddress)
                continue
            }
            switch errno {
            case EAGAIN, EINTR, ECONNABORTED:
                return
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors: the level-triggered source would spin, so pause briefly.
                isBackingOff = true
                source.suspend()
                queue.asyncAfter(deadline: .now() + 0.1) { [self] in
                    guard isBackingOff, !isStopped else { return }
                    isBackingOff = false
                    source.resume()
                }
                return
            default:
                return
            }
        }
    }
}
