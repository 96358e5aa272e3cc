import HTTPTypes
import LookoutHTTP2
import Testing

/// RFC 9113 §5.1.1 stream order from raw frames, as a client that does not start at stream 1
/// sends them (an input of the h2_server fuzz target).
@Suite struct HTTP2StreamOrderTests {
    final class Recorder: HTTP2ServerSessionDelegate {
        var events: [String] = []
        func http2Session(_ session: HTTP2ServerSession, didReceiveRequest headers: [HTTP2Header], stream: Int32,
                          endStream: Bool, fieldBytes: Int) { events.append("request \(stream)") }
        func http2Session(_ session: HTTP2ServerSession, didReceiveOversizedRequest stream: Int32, fieldBytes: Int) {}
        func http2Session(_ session: HTTP2ServerSession, didReceiveData bytes: UnsafeRawBufferPointer, stream: Int32) {}
        func http2Session(_ session: HTTP2ServerSession, didFinishRequest stream: Int32, trailers: [HTTP2Header]?) {}
        func http2Session(_ session: HTTP2ServerSession, didRejectMalformed stream: Int32, reason: String) {}
        func http2Session(_ session: HTTP2ServerSession, didCloseStream stream: Int32, code: HTTP2ErrorCode, byPeer: Bool) {}
        func http2Session(_ session: HTTP2ServerSession, canSendMoreOn stream: Int32) {}
        func http2Session(_ session: HTTP2ServerSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32) {}
        func http2Session(_ session: HTTP2ServerSession, didEndWith code: HTTP2ErrorCode, reason: String) {
            events.append("end \(code.registeredName)")
        }
    }

    static func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let n = UInt32(payload.count)
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags,
                UInt8(stream >> 24), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    /// HEADERS with END_STREAM and END_HEADERS: GET http://a/ from HPACK's static table.
    static func get(on stream: UInt32) -> [UInt8] { frame(1, 0x05, stream, [0x82, 0x86, 0x84, 0x41, 0x01, 0x61]) }

    func feed(_ session: HTTP2ServerSession, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try session.receive($0) }
        _ = try session.writeOutput { _ in true }
    }

    @Test func aFirstRequestAboveStreamOneIsServedAndTheSkippedStreamsStayClosed() throws {
        let recorder = Recorder()
        let session = try HTTP2ServerSession(settings: HTTP2ServerSettings())
        session.delegate = recorder
        try feed(session, Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + Self.frame(4, 0, 0, []))
        try feed(session, Self.get(on: 3))
        #expect(recorder.events == ["request 3"])
        // Stream 1 was skipped, so it is closed: a request on it is a connection error.
        try? feed(session, Self.get(on: 1))
        #expect(recorder.events == ["request 3", "end PROTOCOL_ERROR"])
        withExtendedLifetime(recorder) {}
    }
}
