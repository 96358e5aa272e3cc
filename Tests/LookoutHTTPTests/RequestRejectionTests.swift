import HTTPTypes
import Testing

@testable import LookoutHTTP

struct RejectionCase: Sendable, CustomTestStringConvertible {
    var name: String
    var raw: [UInt8]
    var error: HTTPParseError
    var testDescription: String { "\(name) -> \(error)" }

    init(_ name: String, _ raw: String, _ error: HTTPParseError) {
        self.name = name
        self.raw = Array(raw.utf8)
        self.error = error
    }

    init(_ name: String, bytes raw: [UInt8], _ error: HTTPParseError) {
        self.name = name
        self.raw = raw
        self.error = error
    }
}

let H = "Host: a\r\n"

let requestRejections: [RejectionCase] = [
    // Request line
    .init("double space", "GET  / HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("two spaces before version", "GET /  HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("leading space", " GET / HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("trailing space", "GET / HTTP/1.1 \r\n\(H)\r\n", .invalidRequestLine),
    .init("missing version", "GET /\r\n\(H)\r\n", .invalidRequestLine),
    .init("only method", "GET\r\n\(H)\r\n", .invalidRequestLine),
    .init("tab separator", "GET\t/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("method not a token", "G@T / HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("lowercase protocol", "GET / http/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("version garbage", "GET / HTTP/1.10\r\n\(H)\r\n", .invalidRequestLine),
    .init("version without minor", "GET / HTTP/1\r\n\(H)\r\n", .invalidRequestLine),
    .init("version HTTP/2", "GET / HTTP/2\r\n\(H)\r\n", .invalidRequestLine),
    .init("space in target", "GET /a b HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("fragment in target", "GET /a#b HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("DEL in target", "GET /a\u{7F} HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("target with invalid UTF-8", bytes: Array("GET /caf".utf8) + [0xE9] + Array(" HTTP/1.1\r\n\(H)\r\n".utf8), .invalidRequestLine),
    .init("relative target", "GET a/b HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("authority-form for GET", "GET a.com:443 HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("asterisk for GET", "GET * HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT origin-form", "CONNECT / HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT absolute-form", "CONNECT http://a.com:443/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT without port", "CONNECT a.com HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT empty port", "CONNECT a.com: HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT bad port", "CONNECT a.com:44x HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT port too large", "CONNECT a.com:65536 HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT IPv6 unbracketed", "CONNECT ::1:443 HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("CONNECT userinfo", "CONNECT u@a.com:443 HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute userinfo", "GET http://user:pw@a.com/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute empty host", "GET http:///x HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute empty host with port", "GET http://:80/x HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute bad port", "GET http://a.com:8o/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute huge port", "GET http://a.com:123456/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute missing slashes", "GET http:a.com/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute bad scheme", "GET 1http://a.com/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute bad host char", "GET http://a<b.com/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute unclosed IPv6", "GET http://[::1/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute IPv6 garbage", "GET http://[zz::1]/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    .init("absolute IPv6 junk after bracket", "GET http://[::1]x/ HTTP/1.1\r\n\(H)\r\n", .invalidRequestLine),
    // Version
    .init("HTTP/2.0", "GET / HTTP/2.0\r\n\(H)\r\n", .unsupportedVersion),
    .init("HTTP/0.9", "GET / HTTP/0.9\r\n\(H)\r\n", .unsupportedVersion),
    .init("HTTP/1.2", "GET / HTTP/1.2\r\n\(H)\r\n", .unsupportedVersion),
    .init("h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .unsupportedVersion),
    // Header names
    .init("space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", .invalidHeaderName),
    .init("tab before colon", "GET / HTTP/1.1\r\n\(H)X-A\t: a\r\n\r\n", .invalidHeaderName),
    .init("space in name", "GET / HTTP/1.1\r\n\(H)X A: a\r\n\r\n", .invalidHeaderName),
    .init("empty name", "GET / HTTP/1.1\r\n\(H): a\r\n\r\n", .invalidHeaderName),
    .init("no colon", "GET / HTTP/1.1\r\n\(H)NoColon\r\n\r\n", .invalidHeaderName),
    .init("non-token name", "GET / HTTP/1.1\r\n\(H)X(a): b\r\n\r\n", .invalidHeaderName),
    .init("CTL in name", "GET / HTTP/1.1\r\n\(H)X\u{01}: b\r\n\r\n", .invalidHeaderName),
    // Header values
    .init("NUL in value", bytes: Array("GET / HTTP/1.1\r\n\(H)X: a".utf8) + [0] + Array("b\r\n\r\n".utf8), .invalidHeaderValue),
    .init("CTL in value", "GET / HTTP/1.1\r\n\(H)X: a\u{01}b\r\n\r\n", .invalidHeaderValue),
    .init("DEL in value", "GET / HTTP/1.1\r\n\(H)X: a\u{7F}\r\n\r\n", .invalidHeaderValue),
    .init("ESC in value", "GET / HTTP/1.1\r\n\(H)X: \u{1B}[0m\r\n\r\n", .invalidHeaderValue),
    // Folding and CR
    .init("obs-fold SP", "GET / HTTP/1.1\r\n\(H)X: a\r\n b\r\n\r\n", .obsoleteLineFolding),
    .init("obs-fold HTAB", "GET / HTTP/1.1\r\n\(H)X: a\r\n\tb\r\n\r\n", .obsoleteLineFolding),
    .init("whitespace before first field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", .obsoleteLineFolding),
    .init("bare CR in value", "GET / HTTP/1.1\r\n\(H)X: a\rb\r\n\r\n", .bareCarriageReturn),
    .init("CR CR LF", "GET / HTTP/1.1\r\n\(H)X: a\r\r\n\r\n", .bareCarriageReturn),
    .init("bare CR in request line", "GET /\r HTTP/1.1\r\n\(H)\r\n", .bareCarriageReturn),
    .init("bare CR in name", "GET / HTTP/1.1\r\n\(H)X\rY: a\r\n\r\n", .bareCarriageReturn),
    // Framing
    .init("CL and TE", "POST / HTTP/1.1\r\n\(H)Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .conflictingFraming),
    .init("TE and CL", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", .conflictingFraming),
    .init("CL letters", "POST / HTTP/1.1\r\n\(H)Content-Length: abc\r\n\r\n", .invalidContentLength),
    .init("CL negative", "POST / HTTP/1.1\r\n\(H)Content-Length: -1\r\n\r\n", .invalidContentLength),
    .init("CL plus sign", "POST / HTTP/1.1\r\n\(H)Content-Length: +5\r\n\r\n", .invalidContentLength),
    .init("CL hex", "POST / HTTP/1.1\r\n\(H)Content-Length: 0x5\r\n\r\n", .invalidContentLength),
    .init("CL inner space", "POST / HTTP/1.1\r\n\(H)Content-Length: 5 5\r\n\r\n", .invalidContentLength),
    .init("CL empty", "POST / HTTP/1.1\r\n\(H)Content-Length:\r\n\r\n", .invalidContentLength),
    .init("CL empty element", "POST / HTTP/1.1\r\n\(H)Content-Length: 5,\r\n\r\n", .invalidContentLength),
    .init("CL differing list", "POST / HTTP/1.1\r\n\(H)Content-Length: 5, 6\r\n\r\n", .invalidContentLength),
    .init("CL differing lines", "POST / HTTP/1.1\r\n\(H)Content-Length: 5\r\nContent-Length: 6\r\n\r\n", .invalidContentLength),
    .init("CL overflow", "POST / HTTP/1.1\r\n\(H)Content-Length: 18446744073709551616\r\n\r\n", .invalidContentLength),
    .init("CL way overflow", "POST / HTTP/1.1\r\n\(H)Content-Length: 99999999999999999999999999\r\n\r\n", .invalidContentLength),
    .init("TE gzip only", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: gzip\r\n\r\n", .unsupportedTransferCoding),
    .init("TE chunked then gzip", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked, gzip\r\n\r\n", .unsupportedTransferCoding),
    .init("TE chunked twice", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked, chunked\r\n\r\n", .unsupportedTransferCoding),
    .init("TE unknown coding", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: foo, chunked\r\n\r\n", .unsupportedTransferCoding),
    .init("TE identity", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: identity\r\n\r\n", .unsupportedTransferCoding),
    .init("TE empty", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding:\r\n\r\n", .unsupportedTransferCoding),
    .init("TE chunked with junk", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked x\r\n\r\n", .unsupportedTransferCoding),
    .init("TE chunked lines reversed", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n", .unsupportedTransferCoding),
    .init("TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .unsupportedTransferCoding),
    // Chunked body
    .init("chunk size not hex", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\nzz\r\n", .invalidChunkedEncoding),
    .init("chunk size empty", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n\r\n", .invalidChunkedEncoding),
    .init("chunk size negative", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n-1\r\n", .invalidChunkedEncoding),
    .init("chunk size 0x prefix", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n0x5\r\n", .invalidChunkedEncoding),
    .init("chunk size overflow", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n4000000000000001\r\n", .invalidChunkedEncoding),
    .init("chunk size huge", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n", .invalidChunkedEncoding),
    .init("chunk size leading space", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("chunk size trailing space", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("chunk line bare LF", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("chunk line bare CR", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n5\rhello\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("missing CRLF after data", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("LF only after data", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("CR without LF after data", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3\r\nabc\rX0\r\n\r\n", .invalidChunkedEncoding),
    .init("ext without name", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3;\r\nabc\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("ext empty value", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3;a=\r\nabc\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("ext unterminated quote", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3;a=\"x\r\nabc\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("ext garbage", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3 x\r\nabc\r\n0\r\n\r\n", .invalidChunkedEncoding),
    .init("ext bad value char", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n3;a=b@c\r\nabc\r\n0\r\n\r\n", .invalidChunkedEncoding),
    // Trailers are parsed like headers
    .init("trailer obs-fold", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n0\r\nX: a\r\n b\r\n\r\n", .obsoleteLineFolding),
    .init("trailer bad name", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n0\r\nX Y: a\r\n\r\n", .invalidHeaderName),
    .init("trailer bad value", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n0\r\nX: \u{01}\r\n\r\n", .invalidHeaderValue),
    .init("trailer bare CR", "POST / HTTP/1.1\r\n\(H)Transfer-Encoding: chunked\r\n\r\n0\r\nX: a\rb\r\n\r\n", .bareCarriageReturn),
    // Host
    .init("HTTP/1.1 without Host", "GET / HTTP/1.1\r\nX: a\r\n\r\n", .missingHost),
    .init("two Host lines", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", .missingHost),
    .init("HTTP/1.0 two Host lines", "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", .missingHost),
    .init("absolute without Host", "GET http://a.com/ HTTP/1.1\r\n\r\n", .missingHost),
]

@Suite struct RequestRejectionTests {
    @Test(arguments: requestRejections)
    func rejectedInOneRead(_ c: RejectionCase) {
        expectError(c.error) { _ = try parseRequests([c.raw]) }
    }

    @Test(arguments: requestRejections)
    func rejectedByteByByte(_ c: RejectionCase) {
        expectError(c.error) { _ = try parseRequests(c.raw.map { [$0] }) }
    }

    @Test func errorIsStickyAtSamePlace() {
        // After an error the caller closes the connection; a second call must not crash.
        var p = HTTPRequestParser()
        let raw = bytes("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n")
        expectError(.bareCarriageReturn) { _ = try drive(&p, [raw], describe: describe(_:)) }
    }

    @Test func chunkSizeAtLimitIsAccepted() throws {
        // 2^62 exactly is the largest accepted chunk size; the parser then waits for data.
        var p = HTTPRequestParser()
        let items = try drive(
            &p, [bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4000000000000000\r\nab")],
            describe: describe(_:))
        #expect(items.last == .body(bytes("ab")))
    }
}

@Suite struct LimitTests {
    @Test func requestLineTooLongBeforeCRLF() throws {
        let limits = HTTPParserLimits(maxRequestLineBytes: 100)
        var p = HTTPRequestParser(limits: limits)
        // Exactly 100 bytes without CRLF: not yet over.
        let line = "GET /" + String(repeating: "a", count: 95)
        _ = try drive(&p, [bytes(line)], describe: describe(_:))
        expectError(.requestLineTooLong) { _ = try drive(&p, [bytes("a")], describe: describe(_:)) }
    }

    @Test func requestLineAtLimitIsAccepted() throws {
        let limits = HTTPParserLimits(maxRequestLineBytes: 100)
        let line = "GET /" + String(repeating: "a", count: 86) + " HTTP/1.1"
        #expect(line.utf8.count == 100)
        var p = HTTPRequestParser(limits: limits)
        // A CR at the end of a read must not count against the line.
        let items = try drive(&p, [bytes(line + "\r"), bytes("\nHost: a\r\n\r\n")], describe: describe(_:))
        #expect(items.count == 2)
        expectError(.requestLineTooLong) {
            _ = try parseRequests("GET /" + String(repeating: "a", count: 87) + " HTTP/1.1\r\nHost: a\r\n\r\n", limits: limits)
        }
    }

    @Test func requestLineTooLongWithDefaultLimitsBeforeCRLF() {
        var p = HTTPRequestParser()
        // A megabyte-long target fed in 1 KiB reads fails after ~8 KiB, long before any CRLF.
        let chunk = [UInt8](repeating: 0x61, count: 1024)
        var fed = 0
        expectError(.requestLineTooLong) {
            _ = try drive(&p, [bytes("GET /")], describe: describe(_:))
            for _ in 0..<1024 {
                _ = try drive(&p, [chunk], describe: describe(_:))
                fed += chunk.count
            }
        }
        #expect(fed <= 8192)
        #expect(p.bufferedHeadBytes <= 8192 + 5)
    }

    @Test func headerSectionTooLargeBeforeEnd() {
        let limits = HTTPParserLimits(maxHeaderBytes: 200)
        var p = HTTPRequestParser(limits: limits)
        expectError(.headerSectionTooLarge) {
            _ = try drive(&p, [bytes("GET / HTTP/1.1\r\nHost: a\r\n")], describe: describe(_:))
            for i in 0..<100 {
                _ = try drive(&p, [bytes("X-\(i): v\r\n")], describe: describe(_:))
            }
        }
        #expect(p.bufferedHeadBytes <= 200)
    }

    @Test func headerSectionTooLargeInOneLongLine() {
        let limits = HTTPParserLimits(maxHeaderBytes: 1000)
        var p = HTTPRequestParser(limits: limits)
        expectError(.headerSectionTooLarge) {
            _ = try drive(&p, [bytes("GET / HTTP/1.1\r\nHost: a\r\nX: ")], describe: describe(_:))
            for _ in 0..<100 { _ = try drive(&p, [[UInt8](repeating: 0x62, count: 100)], describe: describe(_:)) }
        }
    }

    @Test func headExactlyAtLimitIsAccepted() throws {
        let head = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        let limits = HTTPParserLimits(maxHeaderBytes: head.utf8.count)
        #expect(try parseRequests(head, limits: limits).count == 2)
        let tight = HTTPParserLimits(maxHeaderBytes: head.utf8.count - 1)
        expectError(.headerSectionTooLarge) { _ = try parseRequests(head, limits: tight) }
        expectError(.headerSectionTooLarge) { _ = try parseRequests(bytes(head).map { [$0] }, limits: tight) }
    }

    @Test func tooManyHeaders() throws {
        let limits = HTTPParserLimits(maxHeaderCount: 3)
        #expect(try parseRequests("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n", limits: limits).count == 2)
        expectError(.tooManyHeaders) { _ = try parseRequests("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits) }
    }

    @Test func tooManyHeadersDetectedBeforeEnd() {
        let limits = HTTPParserLimits(maxHeaderCount: 3)
        var p = HTTPRequestParser(limits: limits)
        expectError(.tooManyHeaders) {
            _ = try drive(&p, [bytes("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n")], describe: describe(_:))
        }
    }

    @Test func defaultHeaderCountLimit() {
        var raw = "GET / HTTP/1.1\r\nHost: a\r\n"
        for i in 0..<128 { raw += "X-\(i): v\r\n" }
        expectError(.tooManyHeaders) { _ = try parseRequests(raw + "\r\n") }
    }

    @Test func chunkLineTooLong() throws {
        let limits = HTTPParserLimits(maxChunkLineBytes: 20)
        let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        // 20 bytes of chunk line is fine.
        let okLine = "3;aaaaaaaaaaaaaaaaaa"
        #expect(okLine.utf8.count == 20)
        #expect(try parseRequests(head + okLine + "\r\nabc\r\n0\r\n\r\n", limits: limits).count == 3)
        expectError(.invalidChunkedEncoding) {
            _ = try parseRequests(head + okLine + "a\r\nabc\r\n0\r\n\r\n", limits: limits)
        }
        // Detected before the CRLF arrives.
        var p = HTTPRequestParser(limits: limits)
        expectError(.invalidChunkedEncoding) {
            _ = try drive(&p, [bytes(head + "3;")], describe: describe(_:))
            for _ in 0..<100 { _ = try drive(&p, [bytes("x")], describe: describe(_:)) }
        }
        // Byte by byte at exactly the limit, CR arriving alone.
        var p2 = HTTPRequestParser(limits: limits)
        let items = try drive(&p2, bytes(head + okLine + "\r\nabc\r\n0\r\n\r\n").map { [$0] }, describe: describe(_:))
        #expect(items.count == 3)
    }

    @Test func trailerSectionTooLarge() {
        let limits = HTTPParserLimits(maxTrailerBytes: 50)
        let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
        var p = HTTPRequestParser(limits: limits)
        expectError(.headerSectionTooLarge) {
            _ = try drive(&p, [bytes(head)], describe: describe(_:))
            for i in 0..<20 { _ = try drive(&p, [bytes("X-\(i): value\r\n")], describe: describe(_:)) }
        }
    }

    @Test func tooManyTrailers() {
        let limits = HTTPParserLimits(maxHeaderCount: 2)
        let raw = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        expectError(.tooManyHeaders) { _ = try parseRequests(raw, limits: limits) }
    }
}
