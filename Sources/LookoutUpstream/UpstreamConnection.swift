import LookoutHTTP
import LookoutIO
import LookoutModel

/// A connection to an origin that can serve several requests in turn (RFC 9112 §9.3).
/// While a task uses it, socket callbacks go to the task; while idle in the pool, any input or
/// close means the origin gave up on it, and it is dropped.
package final class UpstreamConnection: ConnectionDelegate, @unchecked Sendable {  // confined to `connection.loop.queue`
    package let connection: ByteStream
    package let origin: Origin
    /// For https origins: what the handshake negotiated and how trust was decided.
    package let tls: ValueBox<UpstreamTLSDetails>?
    /// The tasks' timeouts (first byte, idle) on this connection.
    package let timer: LoopTimer
    package var task: UpstreamTask?
    package weak var pool: UpstreamConnectionPool?
    /// The addresses as the metrics show them, formatted once for every request on the connection.
    package let remoteAddressText: String?
    package let localAddressText: String?
    /// When the connection last went back to the pool.
    package var idleSince = Instant.now()
    /// When it was opened: a pool told that trust changed keeps none opened before (`retireOpened`).
    package let openedAt = Instant.now()
    /// The last response's fields, lent to the task that uses the connection next.
    package var fieldRecall = FieldRecall()

    package init(connection: ByteStream, origin: Origin, tls: ValueBox<UpstreamTLSDetails>? = nil) {
        self.connection = connection
        self.origin = origin
        self.tls = tls
        self.timer = LoopTimer(loop: connection.loop)
        self.remoteAddressText = connection.peerAddress?.description
        self.localAddressText = connection.localAddress?.description
        connection.delegate = self
        timer.setOwner(self)
    }

    package var isUsable: Bool { !connection.isClosed && !connection.didReadEOF }

    package func attach(_ task: UpstreamTask) {
        self.task = task
        timer.cancel()
        connection.resumeReading()
    }

    package func detach() {
        task = nil
        timer.cancel()
    }

    package func close(abortive: Bool = false) {
        task = nil
        timer.invalidate()
        connection.close(abortive: abortive)
    }

    // MARK: - ConnectionDelegate

    package func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        if let task {
            task.upstreamDidRead(bytes)
        } else {
            // Bytes on an idle connection belong to no request: it cannot be trusted any more.
            pool?.remove(self)
            close()
        }
    }

    package func connectionDidReadEOF(_ connection: ByteStream) {
        if let task {
            task.upstreamDidReadEOF()
        } else {
            pool?.remove(self)
            close()
        }
    }

    package func connectionDidDrain(_ connection: ByteStream) {
        task?.upstreamDidDrain()
    }

    package func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        if let task {
            task.upstreamDidFail(error)
        } else {
            pool?.remove(self)
        }
        timer.invalidate()
    }
}

extension UpstreamConnection: LoopTimerOwner {
    package func loopTimerFired() { task?.timerFired() }
}
