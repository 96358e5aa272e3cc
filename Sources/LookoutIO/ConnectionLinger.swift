/// A connection's close after its user let go of it: its queued bytes are still being written, and
/// it waits for the peer (a FIN after `closeAfterFlush`) or for the peer's acknowledgements (an RST
/// after `resetAfterFlush`), for at most `seconds` without progress.
///
/// Out of line: only closing connections have one, and every idle keep-alive connection holds a
/// `Connection`. It keeps its connection alive, nobody else holding it, until the connection
/// closes and lets go of it.
final class ConnectionLinger: LoopTimerOwner, @unchecked Sendable {  // confined to `connection.loop.queue`
    let connection: Connection
    let timer: LoopTimer
    /// How long the peer may make no progress.
    let seconds: Double
    /// An RST once everything is delivered (`resetAfterFlush`), else a FIN and the peer's end.
    let abortive: Bool
    /// The peer's unacknowledged bytes at the last check: a change is progress.
    var lastUnacknowledgedCount = -1

    init(connection: Connection, seconds: Double, abortive: Bool) {
        self.connection = connection
        self.seconds = seconds
        self.abortive = abortive
        timer = LoopTimer(loop: connection.loop)
        timer.setOwner(self)
    }

    /// (Re)starts the wait: the close comes `seconds` after the peer last made progress.
    func arm() { timer.schedule(after: seconds) }

    func loopTimerFired() { connection.close(abortive: abortive) }
}
