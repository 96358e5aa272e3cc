import LookoutIO

/// Records what a stream delivers to its delegate; touched only on the stream's loop queue.
final class StreamRecorder: ConnectionDelegate, @unchecked Sendable {
    var received: [UInt8] = []
    var sawEOF = false
    var failure: SocketError?
    var drains = 0
    /// Called after each read is recorded.
    var onRead: ((ByteStream) -> Void)?

    func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        received.append(contentsOf: bytes)
        onRead?(connection)
    }
    func connectionDidReadEOF(_ connection: ByteStream) { sawEOF = true }
    func connectionDidDrain(_ connection: ByteStream) { drains += 1 }
    func connection(_ connection: ByteStream, didFailWith error: SocketError) { failure = error }
}
