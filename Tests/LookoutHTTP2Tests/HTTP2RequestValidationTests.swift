import LookoutHTTP2
import Testing

@Suite struct HTTP2RequestValidationTests {
    private let get = [HTTP2Header(":method", "GET"), HTTP2Header(":scheme", "http"),
                       HTTP2Header(":authority", "example.com"), HTTP2Header(":path", "http://example.com/a")]

    @Test func anAbsoluteFormPathAndTrailersAreFine() {
        #expect(HTTP2RequestValidation.problem(inRequest: get + [HTTP2Header("te", "trailers")]) == nil)
        #expect(HTTP2RequestValidation.problem(inTrailers: [HTTP2Header("grpc-status", "0")]) == nil)
        #expect(HTTP2RequestValidation.problem(inRequest: [HTTP2Header(":method", "CONNECT"),
                                                           HTTP2Header(":authority", "a:443")]) == nil)
    }

    @Test(arguments: [
        ([HTTP2Header("connection", "close")], "connection-specific field connection"),
        ([HTTP2Header("te", "gzip")], "connection-specific field te"),
        ([HTTP2Header("Accept", "*/*")], "invalid field name"),
        ([HTTP2Header("", "x")], "invalid field name"),
        ([HTTP2Header("x", "a\r\nb")], "NUL, CR or LF"),
        ([HTTP2Header("x", "a ")], "whitespace around"),
        ([HTTP2Header(":path", "/again")], ":path twice"),
        ([HTTP2Header(":status", "200")], "unknown pseudo-header field :status"),
    ])
    func malformedRequestsSayWhy(extra: [HTTP2Header], reason: String) {
        let problem = HTTP2RequestValidation.problem(inRequest: get + extra)
        #expect(problem?.contains(reason) == true, "\(String(describing: problem))")
    }

    @Test func requiredPseudoFieldsComeFirst() {
        let late = [get[0], HTTP2Header("x", "1")] + get.dropFirst()
        #expect(HTTP2RequestValidation.problem(inRequest: late)?.contains("after a regular field") == true)
        #expect(HTTP2RequestValidation.problem(inRequest: Array(get.dropFirst()))?.contains("no :method") == true)
        #expect(HTTP2RequestValidation.problem(inRequest: get.filter { $0.name != ":scheme" })?.contains("no :scheme") == true)
        #expect(HTTP2RequestValidation.problem(inRequest: get.filter { $0.name != ":path" })?.contains("no :path") == true)
        #expect(HTTP2RequestValidation.problem(inTrailers: [HTTP2Header(":path", "/")])?.contains("in trailers") == true)
    }

    @Test func contentLengthIsDigitsAndOneValue() throws {
        #expect(try HTTP2RequestValidation.contentLength(in: get).get() == nil)
        #expect(try HTTP2RequestValidation.contentLength(in: [HTTP2Header("content-length", "12")]).get() == 12)
        #expect(try HTTP2RequestValidation.contentLength(in: [HTTP2Header("content-length", "5"),
                                                             HTTP2Header("content-length", "5")]).get() == 5)
        for bad in [["+5"], ["5", "6"], [""], ["-1"], ["1 "]] {
            let headers = bad.map { HTTP2Header("content-length", $0) }
            #expect(throws: HTTP2RequestValidationError.self) { try HTTP2RequestValidation.contentLength(in: headers).get() }
        }
    }
}
