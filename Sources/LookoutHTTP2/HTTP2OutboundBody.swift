import CLookoutNGHTTP2
import HTTPTypes

/// Body bytes of one stream waiting for its flow-control window (RFC 9113 §5.2): a response
/// body on the server side, a request body on the client side. Bounded: past `limit` queued
/// bytes the producer is asked to wait, and told when half of it has gone out.
final class HTTP2OutboundBody {
    private var buffer: [UInt8] = []
    private var offset = 0
    let limit: Int
    /// The producer said the body is complete.
    var ended = false
    /// Sent after the body, ending the stream instead of the last DATA frame (§8.1).
    var trailers: [HTTP2Header]?
    /// Reset the stream with this code once the queued bytes are out.
    var resetCode: HTTP2ErrorCode?
    /// nghttp2 was told to wait (NGHTTP2_ERR_DEFERRED) and must be resumed.
    private var deferred = false
    private var producerWaits = false
    private(set) var bytesSent: UInt64 = 0

    init(limit: Int) {
        self.limit = limit
    }

    var pending: Int { buffer.count - offset }

    /// Queues `bytes`; false when `limit` or more are queued (they were queued all the same).
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if offset > 0 && offset == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            offset = 0
        } else if offset >= limit {
            // A stream that never quite drains: drop what was sent, so the queue stays bounded.
            buffer.removeSubrange(0..<offset)
            offset = 0
        }
        buffer.append(contentsOf: bytes)
        if pending >= limit {
            producerWaits = true
            return false
        }
        return true
    }

    /// Copies up to `length` queued bytes to `destination` for a DATA frame. `producerMayContinue`:
    /// the queue fell below half its limit while the producer was waiting.
    func take(into destination: UnsafeMutablePointer<UInt8>, length: Int) -> (count: Int, producerMayContinue: Bool) {
        let count = min(length, pending)
        guard count > 0 else { return (0, false) }
        buffer.withUnsafeBytes { raw in
            UnsafeMutableRawPointer(destination).copyMemory(from: raw.baseAddress! + offset, byteCount: count)
        }
        offset += count
        bytesSent += UInt64(count)
        if producerWaits && pending < limit / 2 {
            producerWaits = false
            return (count, true)
        }
        return (count, false)
    }

    /// Marks that nghttp2 was told NGHTTP2_ERR_DEFERRED for this stream.
    func deferSending() { deferred = true }

    /// Wakes nghttp2 up for the stream if it was waiting for bytes (or for the end).
    func resumeIfDeferred(_ session: OpaquePointer, stream: Int32) {
        guard deferred else { return }
        deferred = false
        nghttp2_session_resume_data(session, stream)
    }
}
