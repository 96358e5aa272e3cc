import HTTPTypes
import Testing

@testable import LookoutHTTP

@Suite struct ResponseParserTests {
    @Test func contentLengthResponse() throws {
        let raw = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
        let heads = try responseHeads(raw)
        let h = try #require(heads.first)
        #expect(h.status == 200)
        #expect(h.reasonPhrase == "OK")
        #expect(h.version == .http1_1)
        #expect(h.framing == .contentLength(5))
        #expect(h.keepAlive)
        #expect(h.headLength == raw.utf8.count - 5)
        #expect(h.headerFields[.contentType] == "text/plain")
        let items = try parseResponses(raw)
        #expect(Array(items.dropFirst()) == [.body(bytes("hello")), .end(nil)])
    }

    @Test func chunkedResponseWithTrailers() throws {
        let raw = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n"
            + "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: done\r\n\r\n"
        let items = try parseResponses(raw)
        #expect(Array(items.dropFirst()) == [.body(bytes("Wikipedia in\r\n\r\nchunks.")), .end(["X-T: done"])])
        #expect(try responseHeads(raw).first?.framing == .chunked)
    }

    @Test func untilCloseResponse() throws {
        let raw = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nstream of bytes"
        let h = try #require(try responseHeads(raw).first)
        #expect(h.framing == .untilClose)
        #expect(!h.keepAlive)
        let items = try parseResponses([bytes(raw), bytes(" and more")], finish: true)
        #expect(Array(items.dropFirst()) == [.body(bytes("stream of bytes and more")), .end(nil)])
    }

    /// RFC 9112 §6.3 rule 4: chunked not the final coding (or absent) means the body runs until close.
    @Test(arguments: ["gzip", "x-unknown", "chunked, gzip", "identity", "chunked\r\nTransfer-Encoding: foo"])
    func transferCodingWithoutFinalChunkedRunsUntilClose(_ codings: String) throws {
        let raw = "HTTP/1.1 200 OK\r\nTransfer-Encoding: \(codings)\r\n\r\n5\r\nabcde\r\n0\r\n\r\n"
        let h = try #require(try responseHeads(raw).first)
        #expect(h.framing == .untilClose)
        #expect(!h.keepAlive)
        let items = try parseResponses([bytes(raw)], finish: true)
        #expect(Array(items.dropFirst()) == [.body(bytes("5\r\nabcde\r\n0\r\n\r\n")), .end(nil)])
        let relayed = codings.split(separator: "\r\n").map { $0.split(separator: ": ").last! }.joined(separator: ", ")
        #expect(TransferCoding.relayedField(h.headerFields) == relayed)
    }

    @Test func untilCloseFinishAndIdle() throws {
        var p = HTTPResponseParser()
        p.expectResponse(to: .get)
        _ = try drive(&p, [bytes("HTTP/1.0 200 OK\r\n\r\nabc")], describe: describe(_:))
        #expect(!p.isIdle)
        guard case .end(let t)? = try p.finish() else {
            Issue.record("expected end")
            return
        }
        #expect(t == nil)
        #expect(p.isIdle)
        #expect(try p.finish() == nil)
    }

    @Test func headResponseHasNoBody() throws {
        let raw = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
        let items = try parseResponses(raw, methods: [.head])
        #expect(items.count == 2 && items[1] == .end(nil))
        let h = try #require(try responseHeads(raw, method: .head).first)
        #expect(h.framing == .none)
        #expect(h.keepAlive)
        // HEAD with chunked TE: still no body.
        #expect(try responseHeads("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", method: .head).first?.framing == BodyFraming.none)
    }

    @Test(arguments: [204, 304])
    func noContentStatuses(_ status: Int) throws {
        let raw = "HTTP/1.1 \(status) X\r\nContent-Length: 10\r\n\r\n"
        let items = try parseResponses(raw + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", methods: [.get, .get])
        #expect(items.count == 5)
        #expect(items[1] == .end(nil))
        #expect(items[3] == .body(bytes("ok")))
        #expect(try responseHeads(raw).first?.framing == BodyFraming.none)
    }

    @Test func interimResponsesThenFinal() throws {
        let raw = "HTTP/1.1 100 Continue\r\n\r\n"
            + "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
            + "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
        var p = HTTPResponseParser()
        p.expectResponse(to: .post)
        var heads: [ResponseHead] = []
        let items = try drive(&p, [bytes(raw)], describe: describe(_:), onHead: { heads.append($0) })
        #expect(heads.map(\.status) == [100, 103, 201])
        #expect(heads[0].framing == .none)
        #expect(items.count == 5)
        #expect(Array(items.suffix(2)) == [.body(bytes("ok")), .end(nil)])
        #expect(p.isIdle)
    }

    @Test func interimResponseIsNotIdle() throws {
        var p = HTTPResponseParser()
        p.expectResponse(to: .put)
        let items = try drive(&p, [bytes("HTTP/1.1 100 Continue\r\n\r\n")], describe: describe(_:))
        #expect(items.count == 1)
        #expect(!p.isIdle)
        expectError(.unexpectedEndOfStream) { _ = try p.finish() }
    }

    @Test func switchingProtocolsStopsParser() throws {
        let raw = bytes("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\u{81}\u{05}hello")
        var p = HTTPResponseParser()
        p.expectResponse(to: .get)
        var head: ResponseHead?
        let items = try drive(&p, [raw], describe: describe(_:), onHead: { head = $0 })
        #expect(head?.status == 101)
        #expect(head?.keepAlive == false)
        #expect(head?.framing == BodyFraming.none)
        #expect(items.count == 2)
        #expect(items[1] == .rest(bytes("\u{81}\u{05}hello")))
        #expect(p.isUpgraded)
        #expect(try p.finish() == nil)
    }

    @Test func connectSuccessStopsParser() throws {
        let raw = bytes("HTTP/1.1 200 Connection Established\r\nContent-Length: 10\r\n\r\nTLS")
        var p = HTTPResponseParser()
        p.expectResponse(to: .connect)
        var head: ResponseHead?
        let items = try drive(&p, [raw], describe: describe(_:), onHead: { head = $0 })
        #expect(head?.framing == BodyFraming.none)
        #expect(head?.keepAlive == false)
        #expect(items.count == 2 && items[1] == .rest(bytes("TLS")))
        #expect(p.isUpgraded)
    }

    @Test func connectFailureHasNormalBody() throws {
        let raw = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 4\r\n\r\nnope"
        let items = try parseResponses(raw, methods: [.connect])
        #expect(Array(items.dropFirst()) == [.body(bytes("nope")), .end(nil)])
    }

    @Test func keepAliveRules() throws {
        #expect(try responseHeads("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").first?.keepAlive == true)
        #expect(try responseHeads("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").first?.keepAlive == false)
        #expect(try responseHeads("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").first?.keepAlive == false)
        #expect(try responseHeads("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").first?.keepAlive == true)
        #expect(try responseHeads("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n").first?.keepAlive == false)
        #expect(try responseHeads("HTTP/1.1 304 Not Modified\r\n\r\n").first?.keepAlive == true)
    }

    @Test func statusLineVariants() throws {
        let h = try #require(try responseHeads("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n").first)
        #expect(h.status == 200 && h.reasonPhrase == "")
        let h2 = try #require(try responseHeads("HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n").first)
        #expect(h2.status == 404 && h2.reasonPhrase == "")
        let h3 = try #require(try responseHeads("HTTP/1.0 500 Internal  Server\tError\r\nContent-Length: 0\r\n\r\n").first)
        #expect(h3.reasonPhrase == "Internal  Server\tError")
        #expect(h3.version == .http1_0)
        let h4 = try #require(try responseHeads("HTTP/1.1 999 Custom\r\nContent-Length: 0\r\n\r\n").first)
        #expect(h4.status == 999)
    }

    @Test func pipelinedResponsesUseQueuedMethods() throws {
        let raw = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"  // answers HEAD: no body
            + "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
            + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"
        let items = try parseResponses([bytes(raw)], methods: [.head, .get, .post])
        let nonHead = items.filter { if case .head = $0 { return false } else { return true } }
        #expect(nonHead == [.end(nil), .body(bytes("abc")), .end(nil), .body(bytes("z")), .end(nil)])
    }

    @Test func headOnlyResponseEndDeliveredByFinish() throws {
        var p = HTTPResponseParser()
        p.expectResponse(to: .get)
        try bytes("HTTP/1.1 204 No Content\r\n\r\n").withUnsafeBytes { buf in
            let (_, e) = try p.parse(buf)
            guard case .head = e else { Issue.record("expected head"); return }
        }
        guard case .end? = try p.finish() else {
            Issue.record("expected end")
            return
        }
        #expect(try p.finish() == nil)
    }

    @Test func finishMidHeadOrBodyThrows() throws {
        var p = HTTPResponseParser()
        #expect(try p.finish() == nil)
        p.expectResponse(to: .get)
        _ = try drive(&p, [bytes("HTTP/1.1 200 OK\r\nContent-")], describe: describe(_:))
        expectError(.unexpectedEndOfStream) { _ = try p.finish() }

        var q = HTTPResponseParser()
        q.expectResponse(to: .get)
        _ = try drive(&q, [bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab")], describe: describe(_:))
        expectError(.unexpectedEndOfStream) { _ = try q.finish() }

        var r = HTTPResponseParser()
        r.expectResponse(to: .get)
        _ = try drive(&r, [bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n")], describe: describe(_:))
        expectError(.unexpectedEndOfStream) { _ = try r.finish() }
    }

    @Test func bufferedHeadBytesForResponses() throws {
        var p = HTTPResponseParser()
        p.expectResponse(to: .get)
        _ = try drive(&p, [bytes("HTTP/1.1 200")], describe: describe(_:))
        #expect(p.bufferedHeadBytes == 12)
        #expect(!p.isIdle)
    }

    static let responseRejections: [RejectionCase] = [
        .init("two-digit status", "HTTP/1.1 20 OK\r\n\r\n", .invalidStatusLine),
        .init("four-digit status", "HTTP/1.1 2000 OK\r\n\r\n", .invalidStatusLine),
        .init("no space after status", "HTTP/1.1 200OK\r\n\r\n", .invalidStatusLine),
        .init("status below 100", "HTTP/1.1 099 X\r\n\r\n", .invalidStatusLine),
        .init("letters in status", "HTTP/1.1 2x0 OK\r\n\r\n", .invalidStatusLine),
        .init("not HTTP", "ICY 200 OK\r\n\r\n", .invalidStatusLine),
        .init("HTTP/2 short", "HTTP/2 200\r\n\r\n", .invalidStatusLine),
        .init("missing status", "HTTP/1.1\r\n\r\n", .invalidStatusLine),
        .init("empty first line", "\r\nHTTP/1.1 200 OK\r\n\r\n", .invalidStatusLine),
        .init("CTL in reason", "HTTP/1.1 200 O\u{01}K\r\n\r\n", .invalidStatusLine),
        .init("HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion),
        .init("HTTP/0.9", "HTTP/0.9 200 OK\r\n\r\n", .unsupportedVersion),
        .init("bare CR in status line", "HTTP/1.1 200 O\rK\r\n\r\n", .bareCarriageReturn),
        .init("obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", .obsoleteLineFolding),
        .init("bad name", "HTTP/1.1 200 OK\r\nX Y: a\r\n\r\n", .invalidHeaderName),
        .init("bad value", "HTTP/1.1 200 OK\r\nX: a\u{00}\r\n\r\n", .invalidHeaderValue),
        .init("CL and TE", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", .conflictingFraming),
        .init("bad CL", "HTTP/1.1 200 OK\r\nContent-Length: 1.5\r\n\r\n", .invalidContentLength),
        .init("differing CL", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", .invalidContentLength),
        .init("TE unknown", "HTTP/1.1 200 OK\r\nTransfer-Encoding: br, chunked\r\n\r\n", .unsupportedTransferCoding),
        .init("TE chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", .unsupportedTransferCoding),
        .init("TE in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferCoding),
        .init("bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", .invalidChunkedEncoding),
        .init("missing chunk CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", .invalidChunkedEncoding),
    ]

    @Test(arguments: responseRejections)
    func rejected(_ c: RejectionCase) {
        expectError(c.error) { _ = try parseResponses([c.raw]) }
        expectError(c.error) { _ = try parseResponses(c.raw.map { [$0] }) }
    }

    @Test func responseHeaderLimits() {
        let limits = HTTPParserLimits(maxHeaderBytes: 100, maxHeaderCount: 2)
        expectError(.headerSectionTooLarge) {
            _ = try parseResponses([bytes("HTTP/1.1 200 OK\r\nX: " + String(repeating: "v", count: 200))], limits: limits)
        }
        expectError(.tooManyHeaders) {
            _ = try parseResponses([bytes("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n")], limits: limits)
        }
    }
}


@Suite struct FinishTests {
    @Test func finishAfterFullBodyButBeforeEndReturnsEnd() throws {
        // A caller that stops calling parse once the input is used up still gets `.end` from finish().
        var p = HTTPResponseParser()
        p.expectResponse(to: .get)
        let raw = bytes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
        try raw.withUnsafeBytes { buf in
            var offset = 0
            while offset < buf.count {
                let (c, _) = try p.parse(UnsafeRawBufferPointer(rebasing: buf[offset...]))
                offset += c
            }
        }
        guard case .end(nil)? = try p.finish() else {
            Issue.record("expected end")
            return
        }
        #expect(p.isIdle)
    }

    @Test func requestFinishAfterFullBodyIsNotAnError() throws {
        var p = HTTPRequestParser()
        let raw = bytes("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
        try raw.withUnsafeBytes { buf in
            var offset = 0
            while offset < buf.count {
                let (c, _) = try p.parse(UnsafeRawBufferPointer(rebasing: buf[offset...]))
                offset += c
            }
        }
        try p.finish()
    }
}
