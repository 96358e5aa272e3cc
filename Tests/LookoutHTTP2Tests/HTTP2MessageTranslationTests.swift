import HTTPTypes
import LookoutHTTP
import LookoutHTTP2
import Testing

@Suite struct HTTP2MessageTranslationTests {
    private func head(_ headers: [HTTP2Header], endStream: Bool = true) throws -> (head: RequestHead, authority: String?) {
        try HTTP2MessageTranslation.requestHead(headers, endStream: endStream, fieldBytes: 100).get()
    }

    private let get = [HTTP2Header(":method", "GET"), HTTP2Header(":scheme", "https"),
                       HTTP2Header(":authority", "example.com"), HTTP2Header(":path", "/a?b")]

    @Test func pseudoFieldsBecomeTheRequestLineAndHost() throws {
        let (head, authority) = try head(get + [HTTP2Header("accept", "*/*")])
        #expect(head.method == .get && head.rawTarget == "/a?b" && head.target == .origin(path: "/a?b"))
        #expect(head.version == .http2 && head.version.description == "HTTP/2")
        #expect(authority == "example.com")
        #expect(head.headerFields.map { "\($0.name): \($0.value)" } == ["Host: example.com", "accept: */*"])
        #expect(head.framing == .none)
    }

    @Test func cookieCrumbsAreJoined() throws {
        let (head, _) = try head(get + [HTTP2Header("cookie", "a=1"), HTTP2Header("x", "y"), HTTP2Header("cookie", "b=2")])
        #expect(head.headerFields[.cookie] == "a=1; b=2")
        #expect(head.headerFields[values: .cookie].count == 1)
    }

    @Test func hostThenTheJoinedCookieLeadTheFieldsInTheirOrder() throws {
        let (head, _) = try head([HTTP2Header("cookie", "a=1")] + get
                                 + [HTTP2Header("x", "y"), HTTP2Header("cookie", "b=2"), HTTP2Header("z", "w")])
        #expect(head.headerFields.map { "\($0.name): \($0.value)" } == ["Host: example.com", "Cookie: a=1; b=2", "x: y", "z: w"])
    }

    @Test func aFieldNameHTTP11CannotCarryIsRefused() {
        #expect(throws: HTTP2RequestProblem.invalidField("bad name")) {
            try HTTP2MessageTranslation.requestHead(get + [HTTP2Header("bad name", "v")], endStream: true, fieldBytes: 10).get()
        }
    }

    @Test func aPseudoFieldRFC9113DoesNotDefineIsRefused() {
        #expect(throws: HTTP2RequestProblem.invalidField(":bogus")) {
            try HTTP2MessageTranslation.requestHead(get + [HTTP2Header(":bogus", "v")], endStream: true, fieldBytes: 10).get()
        }
    }

    @Test func bodyFramingFollowsContentLengthOrIsChunked() throws {
        let post = [HTTP2Header(":method", "POST")] + get.dropFirst()
        #expect(try head(post + [HTTP2Header("content-length", "12")], endStream: false).head.framing == .contentLength(12))
        #expect(try head(Array(post), endStream: false).head.framing == .chunked)
    }

    @Test func connectAndMissingAuthorityAreRefused() {
        let connect = [HTTP2Header(":method", "CONNECT"), HTTP2Header(":authority", "example.com:443")]
        #expect(throws: HTTP2RequestProblem.connectNotSupported) {
            try HTTP2MessageTranslation.requestHead(connect, endStream: false, fieldBytes: 10).get()
        }
        let noAuthority = [HTTP2Header(":method", "GET"), HTTP2Header(":scheme", "https"), HTTP2Header(":path", "/")]
        #expect(throws: HTTP2RequestProblem.missingAuthority) {
            try HTTP2MessageTranslation.requestHead(noAuthority, endStream: true, fieldBytes: 10).get()
        }
        // Host stands in for a missing :authority (RFC 9113 §8.3.1).
        let withHost = noAuthority + [HTTP2Header("host", "h.example")]
        #expect((try? HTTP2MessageTranslation.requestHead(withHost, endStream: true, fieldBytes: 10).get())?.authority == "h.example")
    }

    @Test func responseFieldsLoseConnectionSpecificOnes() {
        var fields = HTTPFields()
        fields[.connection] = "close, X-Hop"
        fields[HTTPField.Name("X-Hop")!] = "1"
        fields[.transferEncoding] = "chunked"
        fields[HTTPField.Name("Keep-Alive")!] = "timeout=5"
        fields[.contentType] = "text/plain"
        #expect(HTTP2MessageTranslation.headers(fields) == [HTTP2Header("content-type", "text/plain")])
    }

    /// Names are ruled out by their length before they are compared: every connection-specific
    /// name goes, and names of the same lengths that differ by one letter stay.
    @Test func everyConnectionSpecificNameGoesAndItsLookalikesStay() {
        let dropped = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"]
        let kept = ["tk", "upgrada", "connectiox", "keep-alivf", "proxy-connectioo", "transfer-encodinf", "host", "cookie"]
        var fields = HTTPFields()
        for name in dropped + kept { fields.append(HTTPField(name: HTTPField.Name(name)!, value: "v")) }
        #expect(HTTP2MessageTranslation.headers(fields).map(\.name) == kept)
    }

    /// `cookie` and `host` are the request fields that become something else; a lookalike of the
    /// same length is an ordinary field.
    @Test func onlyCookieAndHostAreTakenOutOfARequestsFields() throws {
        let (head, _) = try head(get + [HTTP2Header("cookia", "1"), HTTP2Header("hosx", "2"), HTTP2Header("cookie", "c=3")])
        #expect(head.headerFields.map { "\($0.name): \($0.value)" } == ["Host: example.com", "Cookie: c=3", "cookia: 1", "hosx: 2"])
    }

    @Test func errorCodesHaveTheirRegisteredNames() {
        #expect(HTTP2ErrorCode.enhanceYourCalm.registeredName == "ENHANCE_YOUR_CALM")
        #expect(HTTP2ErrorCode(rawValue: 0x42).registeredName == "0x42")
    }
}
