import HTTPTypes
import Testing

@testable import LookoutHTTP

@Suite struct RequestParserTests {
    @Test func simpleGet() throws {
        let raw = "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nuser-agent: t/1\r\nAccept: */*\r\n\r\n"
        var p = HTTPRequestParser()
        var head: RequestHead?
        let items = try drive(&p, [bytes(raw)], describe: describe(_:), onHead: { head = $0 })
        #expect(items.count == 2)
        #expect(items.last == .end(nil))
        let h = try #require(head)
        #expect(h.method == .get)
        #expect(h.rawTarget == "/a?b=1")
        #expect(h.target == .origin(path: "/a?b=1"))
        #expect(h.version == .http1_1)
        #expect(h.framing == .none)
        #expect(h.keepAlive)
        #expect(!h.expectsContinue)
        #expect(h.upgrade == nil)
        #expect(h.headLength == raw.utf8.count)
        #expect(fieldsDescription(h.headerFields) == ["Host: example.com", "user-agent: t/1", "Accept: */*"])
        #expect(h.headerFields[.userAgent] == "t/1")
        #expect(p.isIdle)
    }

    @Test func getEndIsDeliveredWithZeroConsumption() throws {
        let raw = bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        var p = HTTPRequestParser()
        try raw.withUnsafeBytes { buf in
            let (c1, e1) = try p.parse(buf)
            #expect(c1 == raw.count)
            guard case .head = e1 else { Issue.record("expected head"); return }
            #expect(!p.isIdle)
            let (c2, e2) = try p.parse(UnsafeRawBufferPointer(rebasing: buf[c1...]))
            #expect(c2 == 0)
            guard case .end(let t) = e2 else { Issue.record("expected end"); return }
            #expect(t == nil)
            #expect(p.isIdle)
            let (c3, e3) = try p.parse(UnsafeRawBufferPointer(rebasing: buf[c1...]))
            #expect(c3 == 0 && e3 == nil)
        }
    }

    @Test func contentLengthBody() throws {
        let items = try parseRequests("POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world")
        #expect(items.count == 3)
        #expect(items[1] == .body(bytes("hello world")))
        #expect(items[2] == .end(nil))
    }

    @Test func contentLengthZero() throws {
        let heads = try requestHeads("POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
        #expect(heads.first?.framing == .contentLength(0))
        let items = try parseRequests("POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
        #expect(items.count == 2 && items[1] == .end(nil))
    }

    @Test func bodyRangesAreSlicesOfTheInput() throws {
        let raw = bytes("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcdeGET")
        var p = HTTPRequestParser()
        try raw.withUnsafeBytes { buf in
            let (c1, _) = try p.parse(buf)
            let rest = UnsafeRawBufferPointer(rebasing: buf[c1...])
            let (c2, e2) = try p.parse(rest)
            #expect(c2 == 5)
            guard case .body(let r) = e2 else { Issue.record("expected body"); return }
            #expect(r == 0..<5)
            #expect(rest.baseAddress! + r.lowerBound == buf.baseAddress! + c1)  // zero-copy: points into input
        }
    }

    @Test func chunkedWithExtensionsAndTrailers() throws {
        let raw = "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value;flag\r\nhello\r\n"
            + "6 ; q=\"a \\\"quoted\\\" ;x\"\r\n world\r\n"
            + "A\r\n0123456789\r\n"
            + "0;last\r\nX-Checksum: abc\r\nX-Other:  v  \r\n\r\n"
        let items = try parseRequests(raw)
        #expect(items.count == 3)
        #expect(items[1] == .body(bytes("hello world0123456789")))
        #expect(items[2] == .end(["X-Checksum: abc", "X-Other: v"]))
    }

    @Test func chunkedWithoutTrailersEndsWithNil() throws {
        let items = try parseRequests("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        #expect(items == [items[0], .body(bytes("abc")), .end(nil)])
    }

    @Test func chunkSizeWithLeadingZerosAndUppercaseHex() throws {
        let items = try parseRequests("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n000B\r\nhello world\r\n00\r\n\r\n")
        #expect(items[1] == .body(bytes("hello world")))
        #expect(items[2] == .end(nil))
    }

    @Test func transferCodingListEndingInChunked() throws {
        let h = try requestHead("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n")
        #expect(h.framing == .chunked)
        let h2 = try requestHead("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
        #expect(h2.framing == .chunked)
    }

    @Test func repeatedIdenticalContentLengthCollapses() throws {
        #expect(try requestHead("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nabcde").framing == .contentLength(5))
        #expect(
            try requestHead("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc").framing
                == .contentLength(3))
        #expect(try requestHead("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\nabcdefg").framing == .contentLength(7))
    }

    @Test func largeContentLengthIsAccepted() throws {
        let h = try requestHead("PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n")
        #expect(h.framing == .contentLength(UInt64.max))
    }

    @Test func pipelinedRequestsInOneBuffer() throws {
        let raw = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n"
            + "\r\nGET /4 HTTP/1.0\r\n\r\n"
        var p = HTTPRequestParser()
        var heads: [RequestHead] = []
        let items = try drive(&p, [bytes(raw)], describe: describe(_:), onHead: { heads.append($0) })
        #expect(heads.map(\.rawTarget) == ["/1", "/2", "/3", "/4"])
        #expect(heads[3].version == .http1_0)
        #expect(!heads[3].keepAlive)
        let nonHead = items.filter { if case .head = $0 { return false } else { return true } }
        #expect(nonHead == [.end(nil), .body(bytes("abc")), .end(nil), .body(bytes("xy")), .end(nil), .end(nil)])
        #expect(p.isIdle)
    }

    @Test func leadingEmptyLinesAreSkipped() throws {
        let heads = try requestHeads("\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(heads.count == 1)
        #expect(heads[0].headLength == "GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8.count)
        // Split so the CR and LF of a leading empty line arrive in different reads.
        let items = try parseRequests([bytes("\r"), bytes("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")])
        #expect(items.count == 2)
    }

    @Test func tooManyLeadingEmptyLines() {
        expectError(.invalidRequestLine) { _ = try parseRequests("\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n") }
    }

    @Test func bareCRBeforeRequestLine() {
        expectError(.bareCarriageReturn) { _ = try parseRequests("\rGET / HTTP/1.1\r\nHost: a\r\n\r\n") }
    }

    @Test func bareLFLineEndingsAccepted() throws {
        let items = try parseRequests("POST / HTTP/1.1\nHost: a\nContent-Length: 2\n\nok")
        #expect(items.count == 3)
        #expect(items[1] == .body(bytes("ok")))
    }

    @Test func keepAliveRules() throws {
        #expect(try requestHead("GET / HTTP/1.1\r\nHost: a\r\n\r\n").keepAlive)
        #expect(!(try requestHead("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").keepAlive))
        #expect(!(try requestHead("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, CLOSE\r\n\r\n").keepAlive))
        #expect(!(try requestHead("GET / HTTP/1.0\r\n\r\n").keepAlive))
        #expect(try requestHead("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive)
        #expect(!(try requestHead("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n").keepAlive))
        #expect(try requestHead("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n").keepAlive)
    }

    @Test func expectContinue() throws {
        #expect(try requestHead("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx").expectsContinue)
        #expect(try requestHead("PUT / HTTP/1.1\r\nHost: a\r\nexpect:  100-Continue \r\nContent-Length: 1\r\n\r\nx").expectsContinue)
        #expect(!(try requestHead("PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx").expectsContinue))
        #expect(!(try requestHead("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx").expectsContinue))
        // HTTP/1.0 requests' 100-continue is ignored (RFC 9110 §10.1.1).
        #expect(!(try requestHead("PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx").expectsContinue))
    }

    @Test func upgradeRequiresConnectionUpgrade() throws {
        let h = try requestHead("GET /chat HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n")
        #expect(h.upgrade == "websocket")
        let h2 = try requestHead("GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n")
        #expect(h2.upgrade == nil)
        let h3 = try requestHead("GET /chat HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n")
        #expect(h3.upgrade == nil)
    }

    @Test func upgradeRequestDoesNotStopParser() throws {
        let raw = bytes("GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
            + "GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
        var p = HTTPRequestParser()
        var heads: [RequestHead] = []
        let items = try drive(&p, [raw], describe: describe(_:), onHead: { heads.append($0) })
        #expect(items.count == 4)
        #expect(heads.map(\.upgrade) == ["websocket", nil])
        #expect(!p.isUpgraded)
        #expect(p.isIdle)
    }

    @Test func resumeAfterRefusedConnect() throws {
        var p = HTTPRequestParser()
        let items = try drive(&p, [bytes("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n")], describe: describe(_:))
        #expect(items.count == 2)
        #expect(p.isUpgraded)
        #expect(!p.isIdle)
        try p.finish()
        p.resume()
        #expect(!p.isUpgraded)
        #expect(p.isIdle)
        let next = try drive(&p, [bytes("GET /n HTTP/1.1\r\nHost: a\r\n\r\n")], describe: describe(_:))
        #expect(next.count == 2)
    }

    @Test func connectStopsParserAndLeavesTunnelBytes() throws {
        let head = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
        let raw = bytes(head + "\u{16}\u{03}\u{01}hello")
        var p = HTTPRequestParser()
        var h: RequestHead?
        let items = try drive(&p, [raw], describe: describe(_:), onHead: { h = $0 })
        #expect(h?.target == .authority(host: "example.com", port: 443))
        #expect(h?.framing == BodyFraming.none)
        #expect(h?.headLength == head.utf8.count)
        #expect(items.count == 3)
        #expect(items[1] == .end(nil))
        #expect(items[2] == .rest(bytes("\u{16}\u{03}\u{01}hello")))
        #expect(p.isUpgraded)
        // Parser consumes nothing more.
        try bytes("more").withUnsafeBytes { buf in
            let (c, e) = try p.parse(buf)
            #expect(c == 0 && e == nil)
        }
    }

    @Test func connectIgnoresContentLengthZero() throws {
        let h = try requestHead("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\nContent-Length: 0\r\n\r\n")
        #expect(h.framing == .none)
        #expect(h.upgrade == nil)
    }

    @Test func targetForms() throws {
        #expect(try requestHead("GET /x/y?z HTTP/1.1\r\nHost: a\r\n\r\n").target == .origin(path: "/x/y?z"))
        #expect(
            try requestHead("GET HTTP://Example.COM:8080/P?Q HTTP/1.1\r\nHost: example.com:8080\r\n\r\n").target
                == .absolute(scheme: "http", host: "example.com", port: 8080, path: "/P?Q"))
        #expect(
            try requestHead("GET http://a.com HTTP/1.1\r\nHost: a.com\r\n\r\n").target
                == .absolute(scheme: "http", host: "a.com", port: nil, path: "/"))
        #expect(
            try requestHead("GET http://a.com?x=1 HTTP/1.1\r\nHost: a.com\r\n\r\n").target
                == .absolute(scheme: "http", host: "a.com", port: nil, path: "/?x=1"))
        #expect(
            try requestHead("GET http://a.com:/p HTTP/1.1\r\nHost: a.com\r\n\r\n").target
                == .absolute(scheme: "http", host: "a.com", port: nil, path: "/p"))
        #expect(
            try requestHead("GET http://[::1]:8080/x HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n").target
                == .absolute(scheme: "http", host: "::1", port: 8080, path: "/x"))
        #expect(
            try requestHead("GET https://[2001:DB8::1]/ HTTP/1.1\r\nHost: x\r\n\r\n").target
                == .absolute(scheme: "https", host: "2001:db8::1", port: nil, path: "/"))
        #expect(
            try requestHead("GET http://127.0.0.1:9000/x HTTP/1.1\r\nHost: x\r\n\r\n").target
                == .absolute(scheme: "http", host: "127.0.0.1", port: 9000, path: "/x"))
        #expect(
            try requestHead("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n").target
                == .authority(host: "::1", port: 443))
        #expect(
            try requestHead("CONNECT Example.com:8443 HTTP/1.1\r\nHost: example.com:8443\r\n\r\n").target
                == .authority(host: "example.com", port: 8443))
        #expect(try requestHead("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n").target == .asterisk)
        #expect(try requestHead("OPTIONS /x HTTP/1.1\r\nHost: a\r\n\r\n").target == .origin(path: "/x"))
        let h = try requestHead("GET http://[::1]:8080/x HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n")
        #expect(h.rawTarget == "http://[::1]:8080/x")
    }

    @Test func customMethods() throws {
        #expect(try requestHead("PROPFIND /d HTTP/1.1\r\nHost: a\r\n\r\n").method.rawValue == "PROPFIND")
        #expect(try requestHead("DELETE /d HTTP/1.1\r\nHost: a\r\n\r\n").method == .delete)
        #expect(try requestHead("HEAD /d HTTP/1.1\r\nHost: a\r\n\r\n").method == .head)
    }

    @Test func http10WithoutHostIsAccepted() throws {
        let h = try requestHead("GET http://a/ HTTP/1.0\r\n\r\n")
        #expect(h.version == .http1_0)
    }

    @Test func obsTextInValuesIsPreserved() throws {
        var raw = bytes("GET / HTTP/1.1\r\nHost: a\r\nX-Latin: caf")
        raw += [0xE9, 0x20, 0xFF]
        raw += bytes("\r\n\r\n")
        var p = HTTPRequestParser()
        var head: RequestHead?
        _ = try drive(&p, [raw], describe: describe(_:), onHead: { head = $0 })
        let field = try #require(head?.headerFields.first { $0.name.canonicalName == "x-latin" })
        let v = field.withUnsafeBytesOfValue { Array($0) }
        #expect(v == bytes("caf") + [0xE9, 0x20, 0xFF])
    }

    @Test func emptyHeaderValueAndOWSTrimming() throws {
        let h = try requestHead("GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-Tabs:\t a b \t\r\n\r\n")
        #expect(fieldsDescription(h.headerFields) == ["Host: a", "X-Empty: ", "X-Tabs: a b"])
    }

    @Test func stateAccessors() throws {
        var p = HTTPRequestParser()
        #expect(p.isIdle)
        #expect(p.bufferedHeadBytes == 0)
        try bytes("GET / HTTP/1.1\r\nHo").withUnsafeBytes { buf in
            let (c, e) = try p.parse(buf)
            #expect(c == buf.count && e == nil)
        }
        #expect(!p.isIdle)
        #expect(p.bufferedHeadBytes == 18)
        expectError(.unexpectedEndOfStream) { try p.finish() }
        _ = try drive(&p, [bytes("st: a\r\n\r\n")], describe: describe(_:))
        #expect(p.isIdle)
        #expect(p.bufferedHeadBytes == 0)
        try p.finish()
    }

    @Test func finishMidBodyThrows() throws {
        var p = HTTPRequestParser()
        _ = try drive(&p, [bytes("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")], describe: describe(_:))
        expectError(.unexpectedEndOfStream) { try p.finish() }
    }

    @Test func pendingCROnlyIsNotIdle() throws {
        var p = HTTPRequestParser()
        _ = try drive(&p, [bytes("\r")], describe: describe(_:))
        #expect(!p.isIdle)
    }
}
