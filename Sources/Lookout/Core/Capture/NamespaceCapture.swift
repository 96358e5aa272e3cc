import CLookoutSocket
import Dispatch
import LookoutIO
import LookoutSync
#if canImport(Glibc)
import Glibc
#endif

/// Transparent listeners Lookout keeps inside another process's network namespace
/// (`lookout exec --transparent`): the TCP connections made there are redirected to them by the
/// namespace's own nftables rules, and its DNS queries to a `DNSRelay`. Lookout stays in its own
/// namespace and connects upstream from there. Everything is closed when the process that asked
/// exits, and goes with Lookout when Lookout ends (nothing of it outlives both).
final class NamespaceCapture: @unchecked Sendable {  // confined to `queue`
    let pid: Int32
    let port: Int
    let port6: Int?
    let dnsPort: Int?
    private let listeners: [Listener]
    private let relay: DNSRelay?
    private let exitSource: DispatchSourceRead
    private var isStopped = false
    private let queue: DispatchQueue

    /// What went wrong, for the admin answer.
    struct Failure: Error {
        var status: Int
        var message: String
    }

    /// Opens the listeners inside the namespace of `pid`. `accept` receives their connections;
    /// `dns` is where the namespace's queries go (nil: no relay).
    init(pid: Int32, dns: SocketAddress?, queue: DispatchQueue,
         accept: @escaping (Int32, SocketAddress, SocketAddress) -> Void,
         onExit: @escaping @Sendable (NamespaceCapture) -> Void) throws(Failure) {
        let namespace = open("/proc/\(pid)/ns/net", O_RDONLY | O_CLOEXEC)
        guard namespace >= 0 else {
            throw Failure(status: 404, message: "no process \(pid) to capture (/proc/\(pid)/ns/net: \(String(cString: strerror(errno))))")
        }
        defer { close(namespace) }
        let exitFD = lookout_pidfd_open(pid)
        guard exitFD >= 0 else {
            throw Failure(status: 404, message: "cannot watch process \(pid): \(String(cString: strerror(errno)))")
        }
        func socketInside(_ family: Int32, _ type: Int32) throws(Failure) -> Int32 {
            var fd: Int32 = -1
            let error = lookout_socket_in_netns(namespace, family, type, &fd)
            guard error == 0 else {
                throw Failure(status: error == EPERM ? 403 : 500, message: error == EPERM
                    ? "Lookout may not enter another network namespace: run it as root (it needs CAP_SYS_ADMIN)"
                    : "cannot make a socket in the namespace of \(pid): \(String(cString: strerror(error)))")
            }
            return fd
        }
        var listeners: [Listener] = []
        var relay: DNSRelay?
        do {
            for (family, ip) in [(AF_INET, "127.0.0.1"), (AF_INET6, "::1")] {
                let fd = try socketInside(family, Int32(SOCK_STREAM.rawValue))
                let address = SocketAddress(ip: ip, port: 0)!
                // The port is the kernel's choice: the connections learn it once the listener is bound.
                let bound = BoundAddress()
                do {
                    let listener = try Listener(socket: fd, address: address, transparent: true, queue: queue) { fd, peer, _ in
                        accept(fd, peer, bound.address ?? address)
                    }
                    bound.address = listener.address
                    listeners.append(listener)
                } catch {
                    // A namespace without IPv6 has no [::1]; IPv4 is enough.
                    guard family == AF_INET6 else { throw Failure(status: 500, message: "cannot listen in the namespace: \(error)") }
                }
            }
            if let dns {
                relay = try DNSRelay(socket: try socketInside(AF_INET, Int32(SOCK_DGRAM.rawValue)), upstream: dns, queue: queue)
            }
        } catch let failure as Failure {
            listeners.forEach { $0.stop() }
            close(exitFD)
            throw failure
        } catch {
            listeners.forEach { $0.stop() }
            close(exitFD)
            throw Failure(status: 500, message: "\(error)")
        }
        self.pid = pid
        self.queue = queue
        self.listeners = listeners
        self.relay = relay
        port = listeners[0].address.port
        port6 = listeners.count > 1 ? listeners[1].address.port : nil
        dnsPort = relay?.port
        exitSource = DispatchSource.makeReadSource(fileDescriptor: exitFD, queue: queue)
        exitSource.setCancelHandler { close(exitFD) }
        exitSource.setEventHandler { [unowned self] in
            stop()
            onExit(self)
        }
    }

    func start() {
        listeners.forEach { $0.start() }
        relay?.start()
        exitSource.activate()
    }

    /// Closes the listeners and the relay (connections already accepted run on).
    func stop() {
        queue.async { [self] in
            guard !isStopped else { return }
            isStopped = true
            listeners.forEach { $0.stop() }
            relay?.stop()
            exitSource.cancel()
        }
    }

    /// The admin answer's JSON.
    var json: String {
        "{\"pid\":\(pid),\"port\":\(port),\"port6\":\(port6.map(String.init) ?? "null"),\"dns_port\":\(dnsPort.map(String.init) ?? "null")}"
    }
}

/// A listener's address, set once it is bound (before it accepts), read by its accept handler.
private final class BoundAddress: @unchecked Sendable {  // written before the listener starts, then only read on its queue
    var address: SocketAddress?
}
