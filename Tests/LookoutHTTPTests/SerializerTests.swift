import HTTPTypes
import Testing

@testable import LookoutHTTP

@Suite struct SerializerTests {
    @Test func requestHeadBytes() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: HTTPField.Name("Host")!, value: "example.com"))
        fields.append(HTTPField(name: HTTPField.Name("x-Mixed-Case")!, value: "v"))
        let out = HTTPSerializer.requestHead(method: .get, target: "/x?y", version: .http1_1, headerFields: fields)
        #expect(String(decoding: out, as: UTF8.self) == "GET /x?y HTTP/1.1\r\nHost: example.com\r\nx-Mixed-Case: v\r\n\r\n")
    }

    @Test func responseHeadBytes() {
        let fields: HTTPFields = [.contentLength: "0"]
        let out = HTTPSerializer.responseHead(status: 204, reasonPhrase: "No Content", version: .http1_0, headerFields: fields)
        #expect(String(decoding: out, as: UTF8.self) == "HTTP/1.0 204 No Content\r\nContent-Length: 0\r\n\r\n")
        let out2 = HTTPSerializer.responseHead(status: 200, reasonPhrase: "", version: .http1_1, headerFields: [:])
        #expect(String(decoding: out2, as: UTF8.self) == "HTTP/1.1 200 \r\n\r\n")
        let out3 = HTTPSerializer.responseHead(status: 200, reasonPhrase: "OK", version: HTTPVersion(major: 1, minor: 12),
                                               headerFields: [:])
        #expect(String(decoding: out3, as: UTF8.self) == "HTTP/1.12 200 OK\r\n\r\n")
        #expect(HTTPVersion(major: 3, minor: 0).description == "HTTP/3")
        #expect(HTTPVersion(major: 1, minor: 12).description == "HTTP/1.12")
    }

    @Test("every field value is written as the bytes it holds: obs-text, UTF-8 with 0xEF, U+FFFD, empty")
    func valuesWrittenAsHeld() {
        let holds: [[UInt8]] = [
            [0x61, 0xE9, 0xFF, 0x62],  // obs-text that is not UTF-8
            [0xEF, 0xBC, 0xA1],  // U+FF21, valid UTF-8 starting with 0xEF
            [0xEF, 0xBF, 0xBD],  // U+FFFD itself, sent by the origin
            [0xEF, 0xBF],  // a cut sequence: decoding it would read as U+FFFD
            [0xC3, 0xA9],  // é: valid UTF-8 with no 0xEF
            [],
        ]
        var fields = HTTPFields()
        var expected = bytes("HTTP/1.1 200 OK\r\n")
        for (index, value) in holds.enumerated() {
            fields.append(HTTPField(name: HTTPField.Name("X-V\(index)")!, value: value))
            expected += bytes("X-V\(index): ") + value + bytes("\r\n")
        }
        fields.append(HTTPField(name: HTTPField.Name("X-Text")!, value: "plain ascii"))
        expected += bytes("X-Text: plain ascii\r\n\r\n")
        #expect(HTTPSerializer.responseHead(status: 200, reasonPhrase: "OK", version: .http1_1, headerFields: fields) == expected)
    }

    @Test func chunkFraming() {
        #expect(HTTPSerializer.chunkHeader(length: 0) == bytes("0\r\n"))
        #expect(HTTPSerializer.chunkHeader(length: 10) == bytes("a\r\n"))
        #expect(HTTPSerializer.chunkHeader(length: 255) == bytes("ff\r\n"))
        #expect(HTTPSerializer.chunkHeader(length: 4096) == bytes("1000\r\n"))
        #expect(HTTPSerializer.chunkHeader(length: Int.max) == bytes("7fffffffffffffff\r\n"))
        #expect(HTTPSerializer.crlf == [13, 10])
        #expect(HTTPSerializer.lastChunk(trailers: nil) == bytes("0\r\n\r\n"))
        #expect(HTTPSerializer.lastChunk(trailers: HTTPFields()) == bytes("0\r\n\r\n"))
        var t = HTTPFields()
        t.append(HTTPField(name: HTTPField.Name("X-Sum")!, value: "1"))
        #expect(HTTPSerializer.lastChunk(trailers: t) == bytes("0\r\nX-Sum: 1\r\n\r\n"))
    }

    @Test func versionDescription() {
        #expect(HTTPVersion.http1_1.description == "HTTP/1.1")
        #expect(HTTPVersion.http1_0.description == "HTTP/1.0")
        // RFC 9113 names the protocol "HTTP/2", without a minor version.
        #expect(HTTPVersion.http2.description == "HTTP/2")
    }

    @Test func requestRoundTrip() throws {
        // Parse -> serialize -> parse gives the same head (fields, order, case, obs-text).
        var raw = bytes("POST http://Example.com:81/p?q HTTP/1.1\r\nHost: example.com:81\r\nx-lower: a\r\nX-Latin: ")
        raw += [0xE9, 0xFF]
        raw += bytes("\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
        var p = HTTPRequestParser()
        var first: RequestHead?
        _ = try drive(&p, [raw], describe: describe(_:), onHead: { first = $0 })
        let h = try #require(first)
        var wire = HTTPSerializer.requestHead(method: h.method, target: h.rawTarget, version: h.version, headerFields: h.headerFields)
        #expect(wire == raw)
        // Body in chunks with trailers, serialized with the serializer, parses back.
        wire += HTTPSerializer.chunkHeader(length: 5) + bytes("hello") + HTTPSerializer.crlf
        wire += HTTPSerializer.chunkHeader(length: 1) + bytes("!") + HTTPSerializer.crlf
        let trailers: HTTPFields = [HTTPField.Name("X-Trailer")!: "t"]
        wire += HTTPSerializer.lastChunk(trailers: trailers)
        var q = HTTPRequestParser()
        var second: RequestHead?
        let items = try drive(&q, [wire], describe: describe(_:), onHead: { second = $0 })
        #expect(second == h)
        #expect(Array(items.dropFirst()) == [.body(bytes("hello!")), .end(["X-Trailer: t"])])
    }

    @Test func responseRoundTrip() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .contentType, value: "text/plain; charset=utf-8"))
        fields.append(HTTPField(name: HTTPField.Name("X-Lookout-Error")!, value: "malformed_request"))
        fields.append(HTTPField(name: .contentLength, value: "4"))
        fields.append(HTTPField(name: .connection, value: "close"))
        let wire = HTTPSerializer.responseHead(status: 400, reasonPhrase: "Bad Request", version: .http1_1, headerFields: fields)
            + bytes("oops")
        var p = HTTPResponseParser()
        p.expectResponse(to: .get)
        var head: ResponseHead?
        let items = try drive(&p, [wire], describe: describe(_:), onHead: { head = $0 })
        let h = try #require(head)
        #expect(h.status == 400)
        #expect(h.reasonPhrase == "Bad Request")
        #expect(h.headerFields == fields)
        #expect(h.framing == .contentLength(4))
        #expect(!h.keepAlive)
        #expect(h.headLength == wire.count - 4)
        #expect(Array(items.dropFirst()) == [.body(bytes("oops")), .end(nil)])
    }

    @Test func appendVariantsMatch() {
        let fields: HTTPFields = [HTTPField.Name("Host")!: "a"]
        var out = bytes("prefix")
        HTTPSerializer.appendRequestHead(into: &out, method: .put, target: "/", version: .http1_1, headerFields: fields)
        #expect(out == bytes("prefix") + HTTPSerializer.requestHead(method: .put, target: "/", version: .http1_1, headerFields: fields))
    }
}
