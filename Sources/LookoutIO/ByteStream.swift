/// A bidirectional byte stream on one event loop: a plain socket (`Connection`) or TLS over one
/// (`TLSStream`). The proxy's client and upstream sides are written against this, so an
/// intercepted client or an https origin runs through the same code as plain HTTP.
///
/// All calls happen on `loop`. `write` returns false once the stream's bounded queue is full;
/// the delegate hears `connectionDidDrain` when it has room again.
public protocol ByteStream: AnyObject {
    var loop: EventLoop { get }
    /// Process-unique number of the underlying socket, for logs and events.
    var id: UInt64 { get }
    var peerAddress: SocketAddress? { get }
    var localAddress: SocketAddress? { get }
    var delegate: ConnectionDelegate? { get set }
    /// Bytes delivered to / accepted from the user of the stream (plaintext for TLS).
    var bytesRead: UInt64 { get }
    var bytesWritten: UInt64 { get }
    var isClosed: Bool { get }
    /// The peer finished sending.
    var didReadEOF: Bool { get }

    func resumeReading()
    func pauseReading()
    @discardableResult func write(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Queues the bytes `serialize` appends to the stream's own queue: a message head written in
    /// place, without an array of its own first. Returns what `write` would.
    @discardableResult func write(serializedBy serialize: (inout [UInt8]) -> Void) -> Bool
    /// Ends the sending side once everything queued is out; reading continues.
    func shutdownWrite()
    /// Closes now, dropping anything queued; `abortive` resets the connection.
    func close(abortive: Bool)
    /// Sends what is queued, ends the stream, and closes once the peer is done or `linger` passed.
    func closeAfterFlush(linger: Double)
    /// Sends what is queued, then resets the connection instead of ending it: the peer gets every
    /// byte so far and still learns the stream broke off. Resets at once when the peer has made
    /// no progress (taken or acknowledged no byte) for `linger` seconds.
    func resetAfterFlush(linger: Double)
}

extension ByteStream {
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { write($0) }
    }

    @discardableResult
    public func write(serializedBy serialize: (inout [UInt8]) -> Void) -> Bool {
        var bytes: [UInt8] = []
        serialize(&bytes)
        return write(bytes)
    }

    public func close() { close(abortive: false) }

    public func closeAfterFlush() { closeAfterFlush(linger: 2) }

    public func resetAfterFlush() { resetAfterFlush(linger: 2) }
}

/// A failure to report to a stream's delegate on a later turn of its loop.
struct DeferredFailure: @unchecked Sendable {  // delivered on the stream's loop queue
    let stream: ByteStream
    weak var delegate: ConnectionDelegate?
    let error: SocketError

    func deliver() {
        delegate?.connection(stream, didFailWith: error)
    }
}
