import HTTPTypes
import LookoutHTTP2
import Testing

/// Lookout's client session against its server session, in memory: what one side submits the
/// other reports, in order, with flow control and ends.
@Suite struct HTTP2SessionPairTests {
    final class ServerRecorder: HTTP2ServerSessionDelegate {
        var events: [String] = []
        var body: [UInt8] = []
        func http2Session(_ session: HTTP2ServerSession, didReceiveRequest headers: [HTTP2Header], stream: Int32,
                          endStream: Bool, fieldBytes: Int) {
            events.append("request \(stream) " + headers.map { "\($0.name)=\($0.value)" }.joined(separator: " "))
        }
        func http2Session(_ session: HTTP2ServerSession, didReceiveOversizedRequest stream: Int32, fieldBytes: Int) {}
        func http2Session(_ session: HTTP2ServerSession, didReceiveData bytes: UnsafeRawBufferPointer, stream: Int32) {
            body += bytes
        }
        func http2Session(_ session: HTTP2ServerSession, didFinishRequest stream: Int32, trailers: [HTTP2Header]?) {
            events.append("finish \(stream) " + (trailers ?? []).map { "\($0.name)=\($0.value)" }.joined(separator: " "))
        }
        func http2Session(_ session: HTTP2ServerSession, didRejectMalformed stream: Int32, reason: String) {}
        func http2Session(_ session: HTTP2ServerSession, didCloseStream stream: Int32, code: HTTP2ErrorCode, byPeer: Bool) {
            events.append("close \(stream) \(code.registeredName)")
        }
        func http2Session(_ session: HTTP2ServerSession, canSendMoreOn stream: Int32) {}
        func http2Session(_ session: HTTP2ServerSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32) {}
        func http2Session(_ session: HTTP2ServerSession, didEndWith code: HTTP2ErrorCode, reason: String) {}
    }

    final class ClientRecorder: HTTP2ClientSessionDelegate {
        var events: [String] = []
        var body: [UInt8] = []
        var consumeAtOnce = true
        func http2Session(_ session: HTTP2ClientSession, didReceiveResponse headers: [HTTP2Header], stream: Int32,
                          endStream: Bool, fieldBytes: Int) {
            events.append("response \(stream) " + headers.map { "\($0.name)=\($0.value)" }.joined(separator: " "))
        }
        func http2Session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, stream: Int32) {
            body += bytes
            if consumeAtOnce { session.consume(stream: stream, count: bytes.count) }
        }
        func http2Session(_ session: HTTP2ClientSession, didFinishResponse stream: Int32, trailers: [HTTP2Header]?) {
            events.append("finish \(stream) " + (trailers ?? []).map { "\($0.name)=\($0.value)" }.joined(separator: " "))
        }
        func http2Session(_ session: HTTP2ClientSession, didCloseStream stream: Int32, code: HTTP2ErrorCode,
                          problem: HTTP2StreamProblem?) {
            events.append("close \(stream) \(code.registeredName) \(problem.map { "\($0)" } ?? "-")")
        }
        func http2Session(_ session: HTTP2ClientSession, canSendMoreOn stream: Int32) {}
        func http2Session(_ session: HTTP2ClientSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32,
                          debugData: String) {
            events.append("goaway \(code.registeredName) \(lastStreamID)")
        }
        func http2SessionDidReceiveSettings(_ session: HTTP2ClientSession) { events.append("settings") }
        func http2SessionDidReceivePingAck(_ session: HTTP2ClientSession) { events.append("pong") }
    }

    let client: HTTP2ClientSession
    let server: HTTP2ServerSession
    let clientEvents = ClientRecorder()
    let serverEvents = ServerRecorder()

    init() throws {
        client = try HTTP2ClientSession(settings: HTTP2ClientSettings())
        var settings = HTTP2ServerSettings()
        settings.maxConcurrentStreams = 7
        server = try HTTP2ServerSession(settings: settings)
        client.delegate = clientEvents
        server.delegate = serverEvents
    }

    /// Moves bytes both ways until neither side has anything to send.
    func exchangeFrames() throws {
        for _ in 0..<100 {
            var moved = false
            _ = try client.writeOutput { bytes in
                moved = true
                try? server.receive(bytes)
                return true
            }
            _ = try server.writeOutput { bytes in
                moved = true
                try? client.receive(bytes)
                return true
            }
            if !moved { return }
        }
    }

    private let request = [HTTP2Header(":method", "POST"), HTTP2Header(":scheme", "https"),
                           HTTP2Header(":authority", "a.test"), HTTP2Header(":path", "/up"), HTTP2Header("te", "trailers")]

    @Test func requestWithBodyAndTrailersThenResponseWithTrailers() throws {
        let stream = try client.submitRequest(request, hasBody: true)
        #expect(stream == 1)
        [UInt8](repeating: 7, count: 100_000).withUnsafeBytes { _ = client.enqueueBody(stream: stream, $0) }
        client.finishBody(stream: stream, trailers: [HTTP2Header("x-sum", "700000")])
        try exchangeFrames()
        // The server's window reopens only as the body is passed on, as Lookout's client side does.
        for _ in 0..<10 {
            server.consume(stream: stream, count: 16_384)
            try exchangeFrames()
        }
        #expect(serverEvents.body.count == 100_000)
        #expect(serverEvents.events.prefix(2) == ["request 1 :method=POST :scheme=https :authority=a.test :path=/up te=trailers",
                                                  "finish 1 x-sum=700000"])
        #expect(clientEvents.events.first == "settings")
        #expect(client.maxConcurrentStreams == 7)

        server.sendResponse(stream: stream, status: 200, headers: [HTTP2Header("content-type", "application/grpc")],
                            endStream: false)
        [UInt8]("hello".utf8).withUnsafeBytes { _ = server.enqueueBody(stream: stream, $0) }
        server.finishBody(stream: stream, trailers: [HTTP2Header("grpc-status", "0")])
        try exchangeFrames()
        #expect(clientEvents.body == Array("hello".utf8))
        #expect(clientEvents.events.dropFirst() == ["response 1 :status=200 content-type=application/grpc",
                                                    "finish 1 grpc-status=0", "close 1 NO_ERROR -"])
    }

    /// A field with the same bytes as the one at its place in the connection's last section
    /// reuses its strings; any difference — a value, a name, a field more or less — must come
    /// through as sent, on both sides.
    @Test func repeatedSectionsArriveAsSentWhateverChanges() throws {
        let sections: [[HTTP2Header]] = [
            request + [HTTP2Header("x-a", "1"), HTTP2Header("user-agent", "a client with a long name/1.0")],
            request + [HTTP2Header("x-a", "1"), HTTP2Header("user-agent", "a client with a long name/1.0")],
            request + [HTTP2Header("x-a", "2"), HTTP2Header("user-agent", "a client with a long name/1.1")],
            request + [HTTP2Header("x-b", "2")],
            request + [HTTP2Header("x-b", "2"), HTTP2Header("x-c", "")],
            request,
        ]
        var streams: [Int32] = []
        for section in sections {
            streams.append(try client.submitRequest(section, hasBody: false))
            try exchangeFrames()
        }
        let requests = serverEvents.events.filter { $0.hasPrefix("request") }
        #expect(requests == zip(streams, sections).map { stream, section in
            "request \(stream) " + section.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
        })
        for (stream, date) in zip(streams, ["Mon, 23 Nov 2026 10:00:00 GMT", "Mon, 23 Nov 2026 10:00:00 GMT",
                                            "Mon, 23 Nov 2026 10:00:01 GMT", "Mon, 23 Nov 2026 10:00:01 GMT",
                                            "Mon, 23 Nov 2026 10:00:02 GMT", "Mon, 23 Nov 2026 10:00:02 GMT"]) {
            server.sendResponse(stream: stream, status: 200, headers: [HTTP2Header("date", date)], endStream: true)
            try exchangeFrames()
        }
        let responses = clientEvents.events.filter { $0.hasPrefix("response") }
        #expect(responses.map { $0.components(separatedBy: "date=").last! } == [
            "Mon, 23 Nov 2026 10:00:00 GMT", "Mon, 23 Nov 2026 10:00:00 GMT", "Mon, 23 Nov 2026 10:00:01 GMT",
            "Mon, 23 Nov 2026 10:00:01 GMT", "Mon, 23 Nov 2026 10:00:02 GMT", "Mon, 23 Nov 2026 10:00:02 GMT"])
    }

    /// Heads written straight from their fields into nghttp2's array: translated on the way (no
    /// `Host`, no connection-specific fields or those `Connection` names), in order, with the size
    /// §6.5.2 counts — for a usual section, and for one past the writer's stack buffer.
    @Test(arguments: [10, 3000])
    func headsWrittenFromTheirFieldsArriveTranslated(fieldSize: Int) throws {
        let filler = String(repeating: "v", count: fieldSize)
        var fields: HTTPFields = [HTTPField.Name("Host")!: "a.test", .connection: "x-hop", .userAgent: "pair/1"]
        fields.append(HTTPField(name: HTTPField.Name("x-hop")!, value: "dropped"))
        fields.append(HTTPField(name: .transferEncoding, value: "chunked"))
        fields.append(HTTPField(name: HTTPField.Name("x-filler")!, value: filler))
        let (stream, headerBytes) = try client.submitRequest(method: "GET", scheme: "https", authority: "a.test",
                                                             path: "/p", fields: fields, acceptsTrailers: true,
                                                             hasBody: false)
        let expected = HTTP2MessageTranslation.requestHeaders(method: "GET", scheme: "https", authority: "a.test",
                                                              path: "/p", fields: fields, acceptsTrailers: true)
        #expect(expected.map(\.name) == [":method", ":scheme", ":authority", ":path", "user-agent", "x-filler", "te"])
        #expect(headerBytes == expected.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 })
        try exchangeFrames()
        #expect(serverEvents.events.first == "request \(stream) " + expected.map { "\($0.name)=\($0.value)" }.joined(separator: " "))

        server.sendResponse(stream: stream, status: 203, fields: fields, endStream: true)
        try exchangeFrames()
        #expect(clientEvents.events.dropFirst().first
                == "response \(stream) :status=203 host=a.test user-agent=pair/1 x-filler=\(filler)")
    }

    @Test func unconsumedResponseBytesHoldTheStreamWindowShut() throws {
        clientEvents.consumeAtOnce = false
        let stream = try client.submitRequest(request, hasBody: false)
        try exchangeFrames()
        server.sendResponse(stream: stream, status: 200, headers: [], endStream: false)
        [UInt8](repeating: 1, count: 1 << 20).withUnsafeBytes { _ = server.enqueueBody(stream: stream, $0) }
        try exchangeFrames()
        // No more than the client's initial stream window (256 KiB) crossed.
        #expect(clientEvents.body.count == 256 * 1024)
        client.consume(stream: stream, count: clientEvents.body.count)
        try exchangeFrames()
        #expect(clientEvents.body.count > 256 * 1024)
    }

    /// A section larger than a frame (HEADERS then CONTINUATION, RFC 9113 §6.10) and far larger
    /// than the stack's share of the name/value array, between two small ones on other streams:
    /// each arrives whole, field for field, under its own stream.
    @Test func largeAndSmallHeaderSectionsArriveWholeOnTheirStreams() throws {
        let large = request + (0..<40).map { HTTP2Header("x-field-\($0)", String(repeating: "v\($0 % 10)", count: 250)) }
        let first = try client.submitRequest(request, hasBody: false)
        let second = try client.submitRequest(large, hasBody: false)
        let third = try client.submitRequest(request + [HTTP2Header("x-last", "3")], hasBody: false)
        try exchangeFrames()
        let requests = serverEvents.events.filter { $0.hasPrefix("request ") }
        let line = { (stream: Int32, headers: [HTTP2Header]) in
            "request \(stream) " + headers.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
        }
        #expect(requests == [line(first, request), line(second, large), line(third, request + [HTTP2Header("x-last", "3")])])
        #expect(large.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count } > 16 * 1024)
    }

    @Test func smallFramesLeaveTogether() throws {
        // The preface, SETTINGS and six HEADERS frames: one write (over TLS, one record), not eight.
        for _ in 0..<6 { _ = try client.submitRequest(request, hasBody: false) }
        var writes: [[UInt8]] = []
        #expect(try client.writeOutput { bytes in writes.append(Array(bytes)); return true })
        #expect(writes.count == 1)
        #expect(writes[0].count <= 16 * 1024)
        try writes[0].withUnsafeBytes { try server.receive($0) }
        #expect(serverEvents.events.filter { $0.hasPrefix("request ") }.count == 6)
    }

    @Test func aBackedUpConnectionStopsTakingFramesAndLosesNone() throws {
        let stream = try client.submitRequest(request, hasBody: false)
        try exchangeFrames()
        server.sendResponse(stream: stream, status: 200, headers: [], endStream: false)
        let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        body.withUnsafeBytes { _ = server.enqueueBody(stream: stream, $0) }
        server.finishBody(stream: stream, trailers: nil)

        // The first write finds the socket backed up: the session hands over the frame it already
        // took (a DATA frame too big to gather) and no more.
        var writes: [[UInt8]] = []
        #expect(try !server.writeOutput { bytes in writes.append(Array(bytes)); return false })
        #expect(writes.count <= 2)
        let handedOver: Int = writes.map(\.count).reduce(0, +)
        #expect(handedOver <= 32 * 1024 + 9)
        // Later turns take the rest; DATA frames of 16 KiB go alone, and the client gets every
        // byte in order.
        for _ in 0..<20 { _ = try server.writeOutput { bytes in writes.append(Array(bytes)); return true } }
        let sizes: [Int] = writes.map(\.count)
        #expect(sizes.allSatisfy { $0 <= 16 * 1024 + 9 })
        #expect(sizes.filter { $0 == 16 * 1024 + 9 }.count >= 5)
        for chunk in writes { try chunk.withUnsafeBytes { try client.receive($0) } }
        #expect(clientEvents.body == body)
        #expect(clientEvents.events.suffix(2) == ["finish 1 ", "close 1 NO_ERROR -"])
    }

    @Test func resetsGoAwayAndPing() throws {
        let first = try client.submitRequest(request, hasBody: false)
        let second = try client.submitRequest(request, hasBody: false)
        try exchangeFrames()
        server.resetStream(first, code: .refusedStream, afterQueuedBody: false)
        try exchangeFrames()
        #expect(clientEvents.events.contains("close 1 REFUSED_STREAM resetByPeer"))
        client.ping()
        try exchangeFrames()
        #expect(clientEvents.events.contains("pong"))
        server.goAway()
        try exchangeFrames()
        #expect(clientEvents.events.contains("goaway NO_ERROR \(second)"))
        #expect(!client.acceptsNewStreams)
    }
}
