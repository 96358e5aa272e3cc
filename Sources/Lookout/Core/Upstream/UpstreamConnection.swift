import LookoutIO
import LookoutModel

/// A connection to an origin that can serve several requests in turn (RFC 9112 §9.3).
/// While a task uses it, socket callbacks go to the task; while idle in the pool, any input or
/// close means the origin gave up on it, and it is dropped.
final class UpstreamConnection: ConnectionDelegate, @unchecked Sendable {  // confined to `connection.loop.queue`
    let connection: ByteStream
    let origin: Origin
    /// For https origins: what the handshake negotiated and how trust was decided.
    let tls: UpstreamTLSDetails?
    /// The tasks' timeouts (first byte, idle) on this connection.
    let timer: LoopTimer
    var task: UpstreamTask?
    weak var pool: UpstreamConnectionPool?
    /// The addresses as the metrics show them, formatted once for every request on the connection.
    let remoteAddressText: String?
    let localAddressText: String?
    /// When the connection last went back to the pool.
    var idleSince = Instant.now()

    init(connection: ByteStream, origin: Origin, tls: UpstreamTLSDetails? = nil) {
        self.connection = connection
        self.origin = origin
        self.tls = tls
        self.timer = LoopTimer(loop: connection.loop)
        self.remoteAddressText = connection.peerAddress?.description
        self.localAddressText = connection.localAddress?.description
        connection.delegate = self
        timer.setStandingHandler { [unowned self] in task?.timerFired() }
    }

    var isUsable: Bool { !connection.isClosed && !connection.didReadEOF }

    func attach(_ task: UpstreamTask) {
        self.task = task
        timer.cancel()
        connection.resumeReading()
    }

    func detach() {
        task = nil
        timer.cancel()
    }

    func close(abortive: Bool = false) {
        task = nil
        timer.invalidate()
        connection.close(abortive: abortive)
    }

    // MARK: - ConnectionDelegate

    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        if let task {
            task.upstreamDidRead(bytes)
        } else {
            // Bytes on an idle connection belong to no request: it cannot be trusted any more.
            pool?.remove(self)
            close()
        }
    }

    func connectionDidReadEOF(_ connection: ByteStream) {
        if let task {
            task.upstreamDidReadEOF()
        } else {
            pool?.remove(self)
            close()
        }
    }

    func connectionDidDrain(_ connection: ByteStream) {
        task?.upstreamDidDrain()
    }

    func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        if let task {
            task.upstreamDidFail(error)
        } else {
            pool?.remove(self)
        }
        timer.invalidate()
    }
}
