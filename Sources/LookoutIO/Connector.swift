import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Why an outgoing connection could not be made.
public enum ConnectError: Error, Sendable, CustomStringConvertible {
    /// Every address refused or was unreachable; the last error is kept.
    case failed(SocketError)
    /// No address answered within the timeout.
    case timedOut
    /// There was nothing to connect to.
    case noAddresses

    public var description: String {
        switch self {
        case .failed(let error): return error.description
        case .timedOut: return "connect timed out"
        case .noAddresses: return "no addresses to connect to"
        }
    }
}

/// Opens a nonblocking TCP connection, trying each address in turn, each with its own timeout.
public final class Connector: @unchecked Sendable {  // confined to `loop.queue`
    public typealias Completion = (Result<Connection, ConnectError>) -> Void

    private let loop: EventLoop
    private let connectionID: UInt64
    private let timeout: Double
    private var addresses: ArraySlice<SocketAddress>
    private var completion: Completion?
    private var fd: Int32 = -1
    /// The socket's place in the loop's poller while the connect is in progress.
    private var registration: PollRegistration?
    private var pendingAddress: SocketAddress?
    private var timer: LoopTimer?
    private var lastError: ConnectError = .noAddresses

    /// Starts connecting on `loop`; `completion` runs on `loop` exactly once unless `cancel` is called first.
    @discardableResult
    public static func connect(to addresses: [SocketAddress], timeout: Double, on loop: EventLoop,
                               connectionID: UInt64, completion: @escaping Completion) -> Connector {
        let connector = Connector(loop: loop, addresses: addresses, timeout: timeout,
                                  connectionID: connectionID, completion: completion)
        connector.tryNext()
        return connector
    }

    private init(loop: EventLoop, addresses: [SocketAddress], timeout: Double, connectionID: UInt64,
                 completion: @escaping Completion) {
        self.loop = loop
        self.addresses = addresses[...]
        self.timeout = timeout
        self.connectionID = connectionID
        self.completion = completion
    }

    /// Abandons the attempt; the completion is never called.
    public func cancel() {
        completion = nil
        abandonCurrent()
        timer?.invalidate()
        timer = nil
    }

    private func tryNext() {
        guard completion != nil else { return }
        guard let address = addresses.popFirst() else {
            finish(.failure(lastError))
            return
        }
        let fd: Int32
        do {
            fd = try Socket.makeNonBlocking(family: address.family)
        } catch {
            lastError = .failed(error)
            tryNext()
            return
        }
        self.fd = fd
        let rc = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if rc == 0 {
            succeed(address)
            return
        }
        guard errno == EINPROGRESS else {
            lastError = .failed(SocketError("connect \(address)"))
            abandonCurrent()
            tryNext()
            return
        }
        pendingAddress = address
        registration = loop.poller.add(fd, handler: self)
        if registration == nil {
            lastError = .failed(SocketError("epoll_ctl"))
            abandonCurrent()
            tryNext()
            return
        }
        let timer = self.timer ?? LoopTimer(loop: loop)
        self.timer = timer
        timer.schedule(after: timeout) { [unowned self] in
            lastError = .timedOut
            abandonCurrent()
            tryNext()
        }
    }

    private func succeed(_ address: SocketAddress) {
        let fd = self.fd
        // Hand the descriptor over: it leaves the poller here and the connection registers it anew.
        if let registration {
            self.registration = nil
            loop.poller.remove(registration)
        }
        self.fd = -1
        timer?.invalidate()
        timer = nil
        finish(.success(Connection(fd: fd, loop: loop, id: connectionID, peerAddress: address)))
    }

    private func abandonCurrent() {
        guard fd >= 0 else { return }
        let fd = self.fd
        self.fd = -1
        if let registration {
            self.registration = nil
            loop.poller.remove(registration)
        }
        Glibc.close(fd)
    }

    private func finish(_ result: Result<Connection, ConnectError>) {
        timer?.invalidate()
        timer = nil
        guard let completion else {
            if case .success(let connection) = result { connection.close() }
            return
        }
        self.completion = nil
        completion(result)
    }
}

extension Connector: PollHandler {
    /// The connect finished, one way or the other, once the socket is writable (or failed).
    func pollDidReport(_ mask: UInt32) {
        guard mask & .pollWritable != 0, fd >= 0, let address = pendingAddress else { return }
        let code = Socket.pendingError(fd)
        if code == 0 {
            succeed(address)
        } else {
            lastError = .failed(SocketError("connect \(address)", code: code))
            abandonCurrent()
            tryNext()
        }
    }
}
