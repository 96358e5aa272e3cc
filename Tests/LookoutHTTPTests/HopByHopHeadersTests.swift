import HTTPTypes
import Testing
import LookoutHTTP

@Suite struct HopByHopHeadersTests {
    private func name(_ text: String) -> HTTPField.Name { HTTPField.Name(text)! }

    @Test func removesFixedFieldsAndTheOnesConnectionNames() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .connection, value: "  Close ,X-A,\tx-b  , ,keep-alive"))
        fields.append(HTTPField(name: .connection, value: "X-C"))
        for (field, value) in [("Keep-Alive", "timeout=5"), ("Proxy-Connection", "keep-alive"), ("TE", "trailers"),
                               ("Trailer", "X-T"), ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"),
                               ("Proxy-Authorization", "Basic eA=="), ("Proxy-Authenticate", "Basic"),
                               ("X-A", "1"), ("X-B", "2"), ("X-C", "3"), ("X-Keep", "4"), ("Close", "5")] {
            fields.append(HTTPField(name: name(field), value: value))
        }
        HopByHopHeaders.remove(from: &fields)
        // "close" and "keep-alive" are connection options, not field names to remove.
        #expect(fields.map(\.name.canonicalName) == ["x-keep", "close"])
    }

    @Test func leavesEndToEndFieldsAlone() {
        var fields = HTTPFields()
        fields[.contentType] = "text/plain"
        fields[.contentLength] = "3"
        let before = fields
        HopByHopHeaders.remove(from: &fields)
        #expect(fields == before)
    }

    @Test func removesANamedFieldBeforeItsConnectionFieldAndKeepsTheRestInOrder() {
        var fields = HTTPFields()
        for (field, value) in [("X-Early", "1"), ("A", "a"), ("Keep-Alive", "timeout=5"), ("B", "b"),
                               ("Connection", "x-early, keep-alive"), ("C", "c"), ("x-early", "2"), ("D", "d")] {
            fields.append(HTTPField(name: name(field), value: value))
        }
        HopByHopHeaders.remove(from: &fields)
        #expect(fields.map(\.name.canonicalName) == ["a", "b", "c", "d"])
        #expect(fields.map(\.value) == ["a", "b", "c", "d"])
    }

    @Test func removesOnlyTheConnectionFieldOfAUsualResponse() {
        var fields = HTTPFields()
        for (field, value) in [("Server", "nginx"), ("Date", "x"), ("Content-Type", "text/plain"),
                               ("Content-Length", "3"), ("Connection", "keep-alive"), ("ETag", "\"1\"")] {
            fields.append(HTTPField(name: name(field), value: value))
        }
        HopByHopHeaders.remove(from: &fields)
        #expect(fields.map(\.name.canonicalName) == ["server", "date", "content-type", "content-length", "etag"])
    }
}
