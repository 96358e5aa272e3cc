import HTTPTypes
import LookoutIO
import LookoutModel
import LookoutUpstream

/// What a shaped response writer tells its exchange: the one boundary back up.
protocol ShapedResponseWriterDelegate: AnyObject {
    /// The rate let the waiting bytes go: the exchange's producer may go on (from a timer).
    func shapedWriterCanTakeMore()
    /// `faults.reset_after_bytes` were written: the client is to be reset (on a later turn of the loop).
    func shapedWriterReachedResetPoint(after bytes: UInt64)
}

/// A response writer between an exchange and its client that applies the host's shaping rule to
/// the response: the body paced at `download_kbps`, held `stall_ms` after the head, cut after
/// `reset_after_bytes`. Heads, 1xx and errors pass straight through; the end of the body waits
/// for the bytes before it.
final class ShapedResponseWriter: ClientResponseWriter, @unchecked Sendable {  // confined to the exchange's loop queue
    private let base: ClientResponseWriter
    private let pacer: PacedSender
    private let loop: EventLoop
    private let stall: Double
    /// 0 = never.
    private let resetAfterBytes: UInt64
    private var bodyBytes: UInt64 = 0
    private var reachedReset = false
    /// The bytes written before the reset, once `reset_after_bytes` was reached (the response may
    /// also have ended before the delegate hears of it: the exchange checks this when it finishes).
    var resetPoint: UInt64? { reachedReset ? resetAfterBytes : nil }
    private unowned let delegate: ShapedResponseWriterDelegate

    init(base: ClientResponseWriter, rule: ShapingRule, loop: EventLoop, delegate: ShapedResponseWriterDelegate) {
        self.base = base
        self.loop = loop
        self.stall = rule.stall
        self.resetAfterBytes = rule.resetAfterBytes
        self.delegate = delegate
        self.pacer = PacedSender(loop: loop, bytesPerSecond: rule.downloadBytesPerSecond) { [unowned base] in base.writeBody($0) }
        pacer.onReady = { [unowned self] in self.delegate.shapedWriterCanTakeMore() }
    }

    /// Body bytes handed over that have not reached the client yet.
    var isHolding: Bool { pacer.isHolding }

    /// The client drained: true when the exchange may produce more now.
    func clientDidDrain() -> Bool { pacer.sinkDidDrain() }

    /// Runs `work` once every byte handed over has reached the client.
    func whenFlushed(_ work: @escaping () -> Void) { pacer.whenFlushed(work) }

    /// The exchange ended another way: what waits is dropped.
    func cancel() { pacer.cancel() }

    func writeInformational(status: Int, reasonPhrase: String, fields: HTTPFields) {
        base.writeInformational(status: status, reasonPhrase: reasonPhrase, fields: fields)
    }

    func writeHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming) {
        base.writeHead(status: status, reasonPhrase: reasonPhrase, fields: fields, framing: framing)
        if stall > 0 { pacer.hold(for: stall) }
    }

    @discardableResult func writeBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !reachedReset else { return false }
        var bytes = bytes
        if resetAfterBytes > 0, bodyBytes + UInt64(bytes.count) >= resetAfterBytes {
            bytes = UnsafeRawBufferPointer(rebasing: bytes[..<Int(resetAfterBytes - bodyBytes)])
            reachedReset = true
            let count = resetAfterBytes
            loop.execute { [weak self] in self?.delegate.shapedWriterReachedResetPoint(after: count) }
        }
        bodyBytes += UInt64(bytes.count)
        let accepted = bytes.isEmpty || pacer.send(bytes)
        return accepted && !reachedReset
    }

    func writeEnd(trailers: HTTPFields?) {
        guard !reachedReset else { return }
        pacer.whenFlushed { [unowned self] in base.writeEnd(trailers: trailers) }
    }

    func writeError(_ error: ProxyError, requestID: UInt64) {
        base.writeError(error, requestID: requestID)
    }

    var switchableStream: ByteStream? { base.switchableStream }
}
