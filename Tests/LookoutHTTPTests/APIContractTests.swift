import HTTPTypes
import Testing

import LookoutHTTP

/// Pins the public API the rest of Lookout is written against (non-@testable import): a rename or a
/// signature change fails to compile here.
@Suite struct APIContractTests {
    @Test func publicSignatures() throws {
        let v: HTTPVersion = .init(major: 1, minor: 1)
        let _: (Int, Int, String) = (v.major, v.minor, v.description)
        let _: [HTTPVersion] = [.http1_0, .http1_1]

        var limits = HTTPParserLimits(
            maxRequestLineBytes: 8192, maxHeaderBytes: 65536, maxHeaderCount: 128, maxChunkLineBytes: 4096,
            maxTrailerBytes: 16384)
        limits.maxRequestLineBytes = limits.maxHeaderBytes + limits.maxHeaderCount + limits.maxChunkLineBytes + limits.maxTrailerBytes
        let d = HTTPParserLimits()
        #expect(d.maxRequestLineBytes == 8192 && d.maxHeaderBytes == 65536 && d.maxHeaderCount == 128)
        #expect(d.maxChunkLineBytes == 4096 && d.maxTrailerBytes == 16384)
        #expect(limits.maxRequestLineBytes == 65536 + 128 + 4096 + 16384, "a set value reads back")
        // Stored as 32-bit counts: a larger value is the largest one, never a wrapped small one.
        let huge = HTTPParserLimits(maxHeaderBytes: Int.max)
        #expect(huge.maxHeaderBytes == Int(UInt32.max))

        let framings: [BodyFraming] = [.none, .contentLength(1), .chunked, .untilClose]
        let targets: [RequestTarget] = [
            .origin(path: "/"), .absolute(scheme: "http", host: "h", port: nil, path: "/"),
            .authority(host: "h", port: 443), .asterisk,
        ]
        #expect(framings.count == 4 && targets.count == 4)

        let parseRequest: (inout HTTPRequestParser, UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<RequestHead>?) = {
            try $0.parse($1)
        }
        let parseResponse: (inout HTTPResponseParser, UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<ResponseHead>?) = {
            try $0.parse($1)
        }
        var rp = HTTPRequestParser(limits: HTTPParserLimits())
        var sp = HTTPResponseParser(limits: HTTPParserLimits())
        sp.expectResponse(to: HTTPRequest.Method.get)
        let _: HTTPParseEvent<ResponseHead>? = try sp.finish()
        let _: (Bool, Int, Bool) = (rp.isIdle, rp.bufferedHeadBytes, sp.isIdle)
        _ = try parseRequest(&rp, UnsafeRawBufferPointer(start: nil, count: 0))
        _ = try parseResponse(&sp, UnsafeRawBufferPointer(start: nil, count: 0))

        let head = RequestHead(
            method: .get, rawTarget: "/", target: .origin(path: "/"), version: .http1_1, headerFields: [:],
            framing: .none, keepAlive: true, expectsContinue: false, upgrade: nil, headLength: 0)
        let _: (HTTPRequest.Method, String, RequestTarget, HTTPVersion, HTTPFields, BodyFraming, Bool, Bool, String?, Int) = (
            head.method, head.rawTarget, head.target, head.version, head.headerFields, head.framing, head.keepAlive,
            head.expectsContinue, head.upgrade, head.headLength
        )
        let rh = ResponseHead(
            status: 200, reasonPhrase: "OK", version: .http1_1, headerFields: [:], framing: .none, keepAlive: true,
            headLength: 0)
        let _: (Int, String, HTTPVersion, HTTPFields, BodyFraming, Bool, Int) = (
            rh.status, rh.reasonPhrase, rh.version, rh.headerFields, rh.framing, rh.keepAlive, rh.headLength
        )

        let errors: [HTTPParseError] = [
            .requestLineTooLong, .headerSectionTooLarge, .tooManyHeaders, .invalidRequestLine, .invalidStatusLine,
            .unsupportedVersion, .invalidHeaderName, .invalidHeaderValue, .obsoleteLineFolding, .bareCarriageReturn,
            .conflictingFraming, .invalidContentLength, .unsupportedTransferCoding, .invalidChunkedEncoding,
            .unexpectedEndOfStream, .missingHost,
        ]
        #expect(Set(errors.map { "\($0)" }).count == 16)

        let events: [HTTPParseEvent<RequestHead>] = [.head(head), .body(0..<1), .end(trailers: nil)]
        #expect(events.count == 3)

        let _: [UInt8] = HTTPSerializer.requestHead(method: .get, target: "/", version: .http1_1, headerFields: [:])
        let _: [UInt8] = HTTPSerializer.responseHead(status: 200, reasonPhrase: "OK", version: .http1_1, headerFields: [:])
        let _: [UInt8] = HTTPSerializer.chunkHeader(length: 1)
        let _: [UInt8] = HTTPSerializer.crlf
        let _: [UInt8] = HTTPSerializer.lastChunk(trailers: nil)
    }
}
