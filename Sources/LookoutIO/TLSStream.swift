import LookoutTLS

/// How a `TLSStream` handshake ended when it did not complete.
public enum TLSHandshakeFailure: Error, Sendable, CustomStringConvertible {
    /// OpenSSL refused: bad input, an alert, no shared version or cipher, …
    case tls(TLSError)
    /// No complete handshake within the time limit.
    case timedOut(after: Double)
    /// The peer closed (or reset) the connection before the handshake finished.
    case closed(String)

    public var description: String {
        switch self {
        case .tls(let error): return error.description
        case .timedOut(let seconds):
            return "no TLS handshake within \(seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)") s"
        case .closed(let detail): return "the peer closed the connection during the TLS handshake (\(detail))"
        }
    }
}

/// TLS over a `Connection`, through OpenSSL memory BIOs: ciphertext moves between the socket and
/// `TLSConnection`; the stream's delegate sees plaintext, exactly as it would see a plain socket's
/// bytes. Backpressure is the socket's: `write` returns false once the socket's queue is full.
///
/// Plaintext is decrypted into the loop's shared read buffer and handed on at once, like socket
/// reads. Resuming after a pause drains what OpenSSL already holds on a later turn of the loop,
/// never inside the caller's callback, whose own bytes may live in that same buffer.
public final class TLSStream: ByteStream, ConnectionDelegate, @unchecked Sendable {  // confined to `transport.loop.queue`
    public let transport: Connection
    public let tls: TLSConnection
    public var delegate: ConnectionDelegate?

    public var loop: EventLoop { transport.loop }
    public var id: UInt64 { transport.id }
    public var peerAddress: SocketAddress? { transport.peerAddress }
    public var localAddress: SocketAddress? { transport.localAddress }
    public private(set) var bytesRead: UInt64 = 0
    public private(set) var bytesWritten: UInt64 = 0
    public private(set) var isClosed = false
    public private(set) var didReadEOF = false

    private var handshakeCompletion: ((Result<Void, TLSHandshakeFailure>) -> Void)?
    private var isHandshakeComplete = false
    private var readingPaused = true
    private var transportReachedEOF = false
    private var drainScheduled = false
    /// Written before the handshake finished; sent right after it.
    private var earlyPlaintext: [UInt8] = []
    /// Small writes made during a loop batch, encrypted together when it ends (`encryptGathered`):
    /// every `SSL_write` is a record of its own, with 22 bytes of overhead and OpenSSL's fixed cost
    /// per record, and an HTTP/1.1 response is a head and a body written one after the other.
    private var gatheredPlaintext: [UInt8] = []
    /// At most one record's worth of plaintext is gathered (RFC 8446 §5.1: 2^14 bytes).
    static let gatheredPlaintextLimit = 16 * 1024
    /// Writes this large are not copied to be gathered: they fill records of their own.
    static let gatheredWriteLimit = 8 * 1024
    private var handshakeTimer: LoopTimer?

    /// Set before `startHandshake` on a server stream: the client's ClientHello is fingerprinted
    /// (JA4) from copies of its first record as it arrives.
    public var fingerprintsClientHello = false
    /// The client's JA4, once its first record was whole.
    public private(set) var clientJA4: String?
    /// On a client stream: the origin's ServerHello is fingerprinted (JA4S) the same way.
    public var fingerprintsServerHello = false
    public private(set) var serverJA4S: String?
    private var helloGatherer: FirstRecordGatherer?

    /// Wraps `transport`, which must not be read or written directly from now on.
    public init(transport: Connection, tls: TLSConnection) {
        self.transport = transport
        self.tls = tls
    }

    // MARK: - Handshake

    /// Runs the handshake (a client sends its ClientHello now). `completion` runs once, on the
    /// loop; after a failure the socket is already closed (an alert, if any, was sent first).
    /// `initialCiphertext` is what already arrived on the socket before the stream took over
    /// (a client may send its ClientHello right behind its CONNECT).
    public func startHandshake(timeout: Double, initialCiphertext: [UInt8] = [],
                               completion: @escaping (Result<Void, TLSHandshakeFailure>) -> Void) {
        loop.assertOnLoop()
        handshakeCompletion = completion
        if fingerprintsClientHello || fingerprintsServerHello { helloGatherer = FirstRecordGatherer() }
        if !initialCiphertext.isEmpty {
            initialCiphertext.withUnsafeBytes { observeHello($0) }
            tls.receiveCiphertext(initialCiphertext)
        }
        transport.delegate = self
        let timer = LoopTimer(loop: loop)
        handshakeTimer = timer
        timer.schedule(after: timeout) { [weak self] in self?.failHandshake(.timedOut(after: timeout)) }
        transport.resumeReading()
        advanceHandshake()
    }

    private func advanceHandshake() {
        let status = tls.handshake()
        flushCiphertext()
        switch status {
        case .wantIO:
            return
        case .failed(let error):
            failHandshake(.tls(error))
        case .complete:
            isHandshakeComplete = true
            handshakeTimer?.invalidate()
            handshakeTimer = nil
            if readingPaused { transport.pauseReading() }
            if !earlyPlaintext.isEmpty {
                let early = earlyPlaintext
                earlyPlaintext = []
                early.withUnsafeBytes { _ = write($0) }
            }
            let completion = handshakeCompletion
            handshakeCompletion = nil
            completion?(.success(()))
            // Application data may have arrived together with the handshake's last flight.
            if !isClosed && !readingPaused { drainPlaintext() }
        }
    }

    private func failHandshake(_ failure: TLSHandshakeFailure) {
        guard let completion = handshakeCompletion else { return }
        handshakeCompletion = nil
        handshakeTimer?.invalidate()
        handshakeTimer = nil
        isClosed = true
        delegate = nil
        // An alert OpenSSL queued (e.g. unknown_ca) still goes out before the close.
        if case .tls = failure, transport.pendingByteCount > 0 || tls.pendingCiphertextCount > 0 {
            flushCiphertext()
            transport.closeAfterFlush(linger: 1)
        } else {
            transport.close(abortive: false)
        }
        completion(.failure(failure))
    }

    // MARK: - Reading

    public func resumeReading() {
        loop.assertOnLoop()
        guard !isClosed, readingPaused else { return }
        readingPaused = false
        guard isHandshakeComplete else { return }
        if !transportReachedEOF { transport.resumeReading() }
        scheduleDrain()
    }

    public func pauseReading() {
        loop.assertOnLoop()
        guard !isClosed, !readingPaused else { return }
        readingPaused = true
        if isHandshakeComplete { transport.pauseReading() }
    }

    private func scheduleDrain() {
        guard !drainScheduled else { return }
        drainScheduled = true
        loop.execute { [self] in
            drainScheduled = false
            if !isClosed && !readingPaused { drainPlaintext() }
        }
    }

    /// Hands the delegate everything OpenSSL can decrypt now, until paused or closed.
    private func drainPlaintext() {
        let buffer = loop.readBuffer
        while !isClosed && !readingPaused && !didReadEOF {
            let result: TLSReadResult
            do {
                result = try tls.readPlaintext(into: buffer)
            } catch {
                flushCiphertext()
                if error.kind == .unexpectedEOF && transportReachedEOF {
                    // Many servers end with a bare FIN; message framing catches real truncation.
                    deliverEOF()
                } else {
                    fail(SocketError("TLS read", detail: error.description))
                }
                return
            }
            switch result {
            case .bytes(let count):
                bytesRead += UInt64(count)
                delegate?.connection(self, didRead: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            case .wantsRead:
                // Post-handshake messages (tickets, key updates) may need answers.
                flushCiphertext()
                if transportReachedEOF { deliverEOF() }
                return
            case .closed:
                flushCiphertext()
                deliverEOF()
                return
            }
        }
    }

    private func deliverEOF() {
        guard !didReadEOF, !isClosed else { return }
        didReadEOF = true
        delegate?.connectionDidReadEOF(self)
    }

    // MARK: - Writing

    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        loop.assertOnLoop()
        guard !isClosed else { return false }
        guard bytes.count > 0 else { return transport.pendingByteCount < transport.highWaterMark }
        guard isHandshakeComplete else {
            earlyPlaintext.append(contentsOf: bytes)
            return true
        }
        let gathered = gatheredPlaintext.count + bytes.count
        // Gathered only while the socket is far from full, so a write that must answer "backed
        // up" reaches the socket now, and the socket owes the drain notice.
        if loop.isBatching && bytes.count < Self.gatheredWriteLimit && gathered <= Self.gatheredPlaintextLimit
            && transport.pendingByteCount + gathered < transport.highWaterMark {
            if gatheredPlaintext.isEmpty {
                gatheredPlaintext.reserveCapacity(max(4096, bytes.count))
                loop.needsEncryption(self)
            }
            gatheredPlaintext.append(contentsOf: bytes)
            bytesWritten += UInt64(bytes.count)
            return true
        }
        guard encryptGatheredPlaintext() && encrypt(bytes) else { return false }
        bytesWritten += UInt64(bytes.count)
        return flushCiphertext()
    }

    /// Serialized straight into the gathered plaintext while the batch gathers (as `write` would
    /// gather a head); otherwise written as `write` writes.
    @discardableResult
    public func write(serializedBy serialize: (inout [UInt8]) -> Void) -> Bool {
        loop.assertOnLoop()
        guard !isClosed else { return false }
        guard isHandshakeComplete, loop.isBatching, gatheredPlaintext.count < Self.gatheredPlaintextLimit,
              transport.pendingByteCount + gatheredPlaintext.count + Self.gatheredWriteLimit < transport.highWaterMark else {
            var bytes: [UInt8] = []
            serialize(&bytes)
            return write(bytes)
        }
        let wasEmpty = gatheredPlaintext.isEmpty
        if wasEmpty { gatheredPlaintext.reserveCapacity(4096) }
        let before = gatheredPlaintext.count
        serialize(&gatheredPlaintext)
        let added = gatheredPlaintext.count - before
        guard added > 0 else {
            if wasEmpty { gatheredPlaintext = [] }
            return transport.pendingByteCount < transport.highWaterMark
        }
        if wasEmpty { loop.needsEncryption(self) }
        bytesWritten += UInt64(added)
        return true
    }

    /// At the end of the loop batch: encrypts the gathered plaintext and queues it on the socket.
    func encryptGathered() {
        guard !isClosed else { gatheredPlaintext = []; return }
        if encryptGatheredPlaintext() { flushCiphertext() }
    }

    /// Encrypts the gathered plaintext; false after failing the stream.
    private func encryptGatheredPlaintext() -> Bool {
        guard !gatheredPlaintext.isEmpty else { return true }
        let plaintext = gatheredPlaintext
        gatheredPlaintext = []
        return plaintext.withUnsafeBytes { encrypt($0) }
    }

    /// Hands `bytes` to OpenSSL; false after failing the stream.
    private func encrypt(_ bytes: UnsafeRawBufferPointer) -> Bool {
        do {
            try tls.writePlaintext(bytes)
            return true
        } catch {
            // Inside the owner's `write` or the loop's flush: reported on the next turn of the
            // loop, as `Connection` does.
            let report = DeferredFailure(stream: self, delegate: delegate, error: SocketError("TLS write", detail: error.description))
            close(abortive: false)
            loop.execute { report.deliver() }
            return false
        }
    }

    /// Moves OpenSSL's output to the socket; returns whether the socket takes more.
    @discardableResult
    private func flushCiphertext() -> Bool {
        let scratch = loop.ciphertextBuffer
        var accepted = transport.pendingByteCount < transport.highWaterMark
        while !transport.isClosed {
            let count = tls.takeCiphertext(into: scratch)
            guard count > 0 else { break }
            accepted = transport.write(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        }
        return accepted
    }

    // MARK: - Closing

    public func shutdownWrite() {
        loop.assertOnLoop()
        guard !isClosed, encryptGatheredPlaintext() else { return }
        tls.shutdown()
        flushCiphertext()
        transport.shutdownWrite()
    }

    public func close(abortive: Bool) {
        guard !isClosed else { return }
        stopUsing()
        transport.close(abortive: abortive)
    }

    public func closeAfterFlush(linger: Double) {
        loop.assertOnLoop()
        guard !isClosed, encryptGatheredPlaintext() else { return }
        stopUsing()
        // close_notify (RFC 8446 §6.1) so the peer can tell the end from a truncation.
        tls.shutdown()
        flushCiphertext()
        transport.closeAfterFlush(linger: linger)
    }

    /// No close_notify: the peer must not take the end for a clean one.
    public func resetAfterFlush(linger: Double) {
        loop.assertOnLoop()
        guard !isClosed, encryptGatheredPlaintext() else { return }
        stopUsing()
        flushCiphertext()
        transport.resetAfterFlush(linger: linger)
    }

    /// Marks the stream closed for its user; what happens to the socket is up to the caller.
    private func stopUsing() {
        isClosed = true
        gatheredPlaintext = []
        delegate = nil
        handshakeTimer?.invalidate()
        handshakeTimer = nil
        handshakeCompletion = nil
    }

    private func fail(_ error: SocketError) {
        guard !isClosed else { return }
        let delegate = self.delegate
        close(abortive: false)
        delegate?.connection(self, didFailWith: error)
    }

    // MARK: - The socket underneath

    /// Feeds the ClientHello's gatherer until the first record is whole.
    private func observeHello(_ bytes: UnsafeRawBufferPointer) {
        guard var gatherer = helloGatherer else { return }
        if fingerprintsServerHello {
            if let ja4s = gatherer.ja4s(after: bytes) { serverJA4S = ja4s }
        } else if let ja4 = gatherer.ja4(after: bytes) {
            clientJA4 = ja4
        }
        helloGatherer = gatherer.isDone ? nil : gatherer
    }

    public func connection(_ connection: ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        if helloGatherer != nil { observeHello(bytes) }
        tls.receiveCiphertext(bytes)
        if !isHandshakeComplete {
            advanceHandshake()
        } else if !readingPaused {
            drainPlaintext()
        }
    }

    public func connectionDidReadEOF(_ connection: ByteStream) {
        transportReachedEOF = true
        tls.receiveEndOfStream()
        if !isHandshakeComplete {
            // OpenSSL may still complete (or fail with a better reason) on what it has.
            advanceHandshake()
            if !isHandshakeComplete { failHandshake(.closed("end of stream")) }
        } else if !readingPaused {
            drainPlaintext()
        }
    }

    public func connectionDidDrain(_ connection: ByteStream) {
        delegate?.connectionDidDrain(self)
    }

    public func connection(_ connection: ByteStream, didFailWith error: SocketError) {
        if !isHandshakeComplete {
            failHandshake(.closed(error.description))
            return
        }
        guard !isClosed else { return }
        isClosed = true
        let delegate = self.delegate
        self.delegate = nil
        delegate?.connection(self, didFailWith: error)
    }
}
