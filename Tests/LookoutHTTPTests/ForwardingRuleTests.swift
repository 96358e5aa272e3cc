import HTTPTypes
import Testing

@testable import LookoutHTTP

/// What the parser accepts that real clients send, and the canonical fields Lookout forwards for it.
@Suite struct ForwardingRuleTests {
    @Test func utf8TargetIsAcceptedByteForByte() throws {
        let target = "/caf\u{E9}/\u{65E5}\u{672C}?q=\u{00FC}ber"
        let h = try requestHead("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(h.rawTarget == target)
        #expect(Array(h.rawTarget.utf8) == Array(target.utf8))
        #expect(h.target == .origin(path: target))
        let absolute = try requestHead("GET http://a.example/\u{E9}t\u{E9} HTTP/1.1\r\nHost: a.example\r\n\r\n")
        #expect(absolute.target == .absolute(scheme: "http", host: "a.example", port: nil, path: "/\u{E9}t\u{E9}"))
    }

    @Test(arguments: [
        [0xC3, 0x28] as [UInt8],            // a lead byte without its continuation
        [0xFF],                             // never valid in UTF-8
        [0xF0, 0x9F, 0x98],                 // a 4-byte sequence cut short (same length as U+FFFD)
        [0xC0, 0xAF],                       // an overlong "/"
    ])
    func invalidUTF8TargetIsRejected(_ raw: [UInt8]) {
        let message = Array("GET /x".utf8) + raw + Array(" HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        var p = HTTPRequestParser()
        #expect(throws: HTTPParseError.invalidRequestLine) {
            _ = try message.withUnsafeBytes { try p.parse($0) }
        }
    }

    @Test func controlBytesInTargetStayRejected() {
        for byte: UInt8 in [0x00, 0x01, 0x7F, 0x09] {
            let message = Array("GET /a".utf8) + [byte] + Array("b HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
            var p = HTTPRequestParser()
            #expect(throws: HTTPParseError.self) { _ = try message.withUnsafeBytes { try p.parse($0) } }
        }
    }

    @Test(arguments: [
        ("chunked", "chunked"),
        ("Chunked", "chunked"),
        ("identity, chunked", "chunked"),
        ("chunked;foo=bar", "chunked"),
        ("chunked ; q=1", "chunked"),
        ("gzip, chunked", "gzip, chunked"),
        ("GZip;level=9 , identity, chunked", "gzip, chunked"),
        ("x-gzip, deflate, chunked", "x-gzip, deflate, chunked"),
    ])
    func acceptedTransferCodingsForwardCanonically(_ value: String, _ canonical: String) throws {
        let h = try requestHead("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \(value)\r\n\r\n0\r\n\r\n")
        #expect(h.framing == .chunked)
        #expect(TransferCoding.canonicalField(h.headerFields) == canonical)
    }

    @Test func codingsSplitOverLinesForwardAsOne() throws {
        let h = try requestHead("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n")
        #expect(TransferCoding.canonicalField(h.headerFields) == "gzip, chunked")
    }

    @Test(arguments: ["chunked, identity", "identity", "br, chunked", "chunked, chunked"])
    func codingsThatLeaveFramingUnclearAreRefused(_ value: String) {
        var p = HTTPRequestParser()
        let message = Array("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \(value)\r\n\r\n".utf8)
        #expect(throws: HTTPParseError.unsupportedTransferCoding) { _ = try message.withUnsafeBytes { try p.parse($0) } }
    }

    @Test func identicalContentLengthListIsOneLength() throws {
        let h = try requestHead("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3,3\r\nContent-Length: 3\r\n\r\nabc")
        #expect(h.framing == .contentLength(3) && h.contentLengthIsList)
        let single = try requestHead("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
        #expect(!single.contentLengthIsList)
        let responses = try responseHeads("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok")
        #expect(responses.first?.contentLengthIsList == true)
    }
}
