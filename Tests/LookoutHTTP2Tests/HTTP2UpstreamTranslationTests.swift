import HTTPTypes
import LookoutHTTP
import LookoutHTTP2
import Testing

/// Requests toward an HTTP/2 origin and its responses back (RFC 9113 §8.2, §8.3).
@Suite struct HTTP2UpstreamTranslationTests {
    private func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    @Test func requestHeadersPutPseudoFieldsFirstAndDropConnectionSpecificOnes() {
        let headers = HTTP2MessageTranslation.requestHeaders(
            method: "POST", scheme: "https", authority: "api.test:8443", path: "/rpc?x=1",
            fields: fields([("Host", "api.test:8443"), ("Content-Type", "application/grpc"), ("Connection", "X-Hop"),
                            ("X-Hop", "1"), ("Transfer-Encoding", "chunked"), ("Keep-Alive", "5"), ("X-Kept", "A")]),
            acceptsTrailers: true)
        #expect(headers == [HTTP2Header(":method", "POST"), HTTP2Header(":scheme", "https"),
                            HTTP2Header(":authority", "api.test:8443"), HTTP2Header(":path", "/rpc?x=1"),
                            HTTP2Header("content-type", "application/grpc"), HTTP2Header("x-kept", "A"),
                            HTTP2Header("te", "trailers")])
        let plain = HTTP2MessageTranslation.requestHeaders(method: "GET", scheme: "http", authority: "h", path: "/",
                                                           fields: fields([]), acceptsTrailers: false)
        #expect(!plain.contains { $0.name == "te" })
    }

    private func response(_ headers: [HTTP2Header], endStream: Bool = false,
                          method: HTTPRequest.Method = .get) -> ResponseHead? {
        HTTP2MessageTranslation.responseHead(headers, endStream: endStream, fieldBytes: 64, requestMethod: method)
    }

    @Test func responseFramingForAnHTTP1Client() throws {
        let sized = try #require(response([HTTP2Header(":status", "200"), HTTP2Header("content-length", "5")]))
        #expect(sized.status == 200 && sized.reasonPhrase == "OK" && sized.version == .http2)
        #expect(sized.framing == .contentLength(5) && sized.headerFields[.contentLength] == "5")
        // No length: chunked for HTTP/1.1.
        let open = try #require(response([HTTP2Header(":status", "200")]))
        #expect(open.framing == .chunked)
        // END_STREAM on HEADERS: an empty body with a length an HTTP/1.1 client can frame by.
        let empty = try #require(response([HTTP2Header(":status", "404")], endStream: true))
        #expect(empty.framing == .contentLength(0) && empty.headerFields[.contentLength] == "0")
        #expect(empty.reasonPhrase == "Not Found")
        for (status, method) in [(204, HTTPRequest.Method.get), (304, .get), (200, .head), (103, .get)] {
            let head = try #require(response([HTTP2Header(":status", String(status))], method: method))
            #expect(head.framing == .none, "\(status) \(method)")
        }
    }

    @Test func responseWithoutAValidStatusIsRefused() {
        #expect(response([HTTP2Header("content-length", "0")]) == nil)
        #expect(response([HTTP2Header(":status", "2xx")]) == nil)
        #expect(response([HTTP2Header(":status", "42")]) == nil)
    }

    @Test func trailerSectionsBecomeFields() {
        let trailers = HTTP2MessageTranslation.fields([HTTP2Header("grpc-status", "0"), HTTP2Header("grpc-message", "ok")])
        #expect(trailers[HTTPField.Name("grpc-status")!] == "0" && trailers.count == 2)
    }
}
