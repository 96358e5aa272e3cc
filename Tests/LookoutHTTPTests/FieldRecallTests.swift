import HTTPTypes
import Testing

@testable import LookoutHTTP

/// A kept-alive connection's next response takes the lines that repeat the previous response's
/// fields (same position, same bytes) from the remembered fields, and parses every other line.
@Suite struct FieldRecallTests {
    /// Parses `raw` (one or more responses to GET) with `parser`, in the given pieces, returning the heads.
    private func heads(_ parser: inout HTTPResponseParser, _ pieces: [String], responses: Int = 1) throws -> [ResponseHead] {
        for _ in 0..<responses { parser.expectResponse(to: .get) }
        var heads: [ResponseHead] = []
        _ = try drive(&parser, pieces.map(bytes), describe: describe(_:), onHead: { heads.append($0) })
        return heads
    }

    /// Where a field's value bytes live: the same address means the same string storage.
    private func valueAddress(_ head: ResponseHead, _ index: Int) -> UnsafeRawPointer? {
        head.headerFields.withFieldBuffer { buffer in
            buffer[index].withUnsafeBytesOfValue { UnsafeRawPointer($0.baseAddress) }
        }
    }

    private let first = "HTTP/1.1 200 OK\r\nServer: origin/1.0\r\nDate: Fri, 27 Nov 2026 21:15:38 GMT\r\n"
        + "Content-Type: application/octet-stream\r\nContent-Length: 3\r\n\r\nabc"

    @Test func repeatedLinesShareTheRememberedStrings() throws {
        var parser = HTTPResponseParser()
        let second = "HTTP/1.1 200 OK\r\nServer: origin/1.0\r\nDate: Fri, 27 Nov 2026 21:15:39 GMT\r\n"
            + "Content-Type:   application/octet-stream \r\nContent-Length: 3\r\n\r\nxyz"
        let parsed = try heads(&parser, [first, second], responses: 2)
        #expect(parsed.count == 2)
        let (a, b) = (parsed[0], parsed[1])
        // Content-Type repeats (whitespace around a value is not part of it): one string for both.
        #expect(b.headerFields[.contentType] == "application/octet-stream")
        #expect(valueAddress(a, 2) != nil && valueAddress(a, 2) == valueAddress(b, 2))
        // Date changed: the new value, in its own string.
        #expect(b.headerFields[.date] == "Fri, 27 Nov 2026 21:15:39 GMT")
        #expect(valueAddress(a, 1) != valueAddress(b, 1))
        #expect(b.framing == .contentLength(3))
        #expect(Array(b.headerFields) == [HTTPField(name: .server, value: "origin/1.0"),
                                   HTTPField(name: .date, value: "Fri, 27 Nov 2026 21:15:39 GMT"),
                                   HTTPField(name: .contentType, value: "application/octet-stream"),
                                   HTTPField(name: .contentLength, value: "3")])
    }

    @Test func aLineOnlyStartingLikeTheRememberedOneIsParsed() throws {
        var parser = HTTPResponseParser()
        let second = "HTTP/1.1 200 OK\r\nServer: origin/1.0 extra\r\nDate: Fri, 27 Nov 2026 21:15:38 GMTX\r\n"
            + "Content-TypeX: application/octet-stream\r\ncontent-length: 3\r\n\r\nxyz"
        let b = try heads(&parser, [first, second], responses: 2)[1]
        var seen: [String] = []
        b.headerFields.withFieldBuffer { buffer in
            for field in buffer { seen.append("\(field.name.rawName): \(field.value)") }
        }
        // The wire's spelling of a name is kept, so a different case is a different line.
        #expect(seen == ["Server: origin/1.0 extra", "Date: Fri, 27 Nov 2026 21:15:38 GMTX",
                         "Content-TypeX: application/octet-stream", "content-length: 3"])
        #expect(b.framing == .contentLength(3))
    }

    /// The framing and connection facts come from a repeated line as from a parsed one.
    @Test func factsAreCollectedFromRepeatedLines() throws {
        var parser = HTTPResponseParser()
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        let parsed = try heads(&parser, [chunked, chunked], responses: 2)
        #expect(parsed.count == 2)
        #expect(parsed[1].framing == .chunked)
        #expect(!parsed[1].keepAlive)
    }

    /// A line that repeats a remembered name but not its bytes goes through every check.
    @Test func aChangedLineIsValidatedAgain() throws {
        var parser = HTTPResponseParser()
        #expect(throws: HTTPParseError.bareCarriageReturn) {
            _ = try heads(&parser, [first, "HTTP/1.1 200 OK\r\nServer: origin/1.0\rX\r\n\r\n"], responses: 2)
        }
        var second = HTTPResponseParser()
        #expect(throws: HTTPParseError.invalidContentLength) {
            _ = try heads(&second, [first, "HTTP/1.1 200 OK\r\nServer: origin/1.0\r\nDate: x\r\nContent-Type: a\r\n"
                                        + "Content-Length: 3x\r\n\r\n"], responses: 2)
        }
    }

    /// A head that arrives in pieces (parsed from the accumulated copy) is remembered the same.
    @Test func headsInPiecesAreRemembered() throws {
        var parser = HTTPResponseParser()
        let split = first.index(first.startIndex, offsetBy: 40)
        let parsed = try heads(&parser, [String(first[..<split]), String(first[split...]), first], responses: 2)
        #expect(parsed.count == 2)
        #expect(valueAddress(parsed[0], 2) == valueAddress(parsed[1], 2))
        #expect(parsed[1].headerFields == parsed[0].headerFields)
    }

    /// The connection keeps the fields between the parsers of its successive tasks.
    @Test func fieldsPassFromOneParserToTheNext() throws {
        var kept = FieldRecall()
        var one = HTTPResponseParser()
        one.swapFieldRecall(with: &kept)
        let a = try heads(&one, [first])[0]
        one.swapFieldRecall(with: &kept)
        var two = HTTPResponseParser()
        two.swapFieldRecall(with: &kept)
        let b = try heads(&two, [first])[0]
        #expect(valueAddress(a, 2) == valueAddress(b, 2))
        #expect(a.headerFields == b.headerFields)
    }

    /// Past the remembered positions every line is parsed, and nothing is lost.
    @Test func longHeadsParseWhole() throws {
        var parser = HTTPResponseParser()
        let lines = (0..<(FieldRecall.positions + 8)).map { "X-Field-\($0): a value long enough for the heap \($0)\r\n" }
        let response = "HTTP/1.1 204 No Content\r\n" + lines.joined() + "\r\n"
        let parsed = try heads(&parser, [response, response], responses: 2)
        #expect(parsed.count == 2)
        #expect(parsed[1].headerFields.count == FieldRecall.positions + 8)
        #expect(parsed[1].headerFields == parsed[0].headerFields)
        #expect(valueAddress(parsed[0], 0) == valueAddress(parsed[1], 0))
        #expect(valueAddress(parsed[0], FieldRecall.positions) != valueAddress(parsed[1], FieldRecall.positions))
    }
}
