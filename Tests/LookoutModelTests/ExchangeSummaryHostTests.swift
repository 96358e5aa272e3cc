@testable import LookoutModel
import Testing

@Suite struct ExchangeSummaryHostTests {
    private func host(_ url: String) -> String {
        String(ExchangeSummary(requestID: 1, connectionID: 1, clientAddress: "", kind: .http, method: "GET", url: url,
                               httpVersion: "HTTP/1.1", start: .now()).host)
    }

    @Test func fromAbsoluteURLsAndTunnelAuthorities() {
        #expect(host("http://api.example.com/v1?q=1") == "api.example.com")
        #expect(host("https://api.example.com:8443/") == "api.example.com")
        #expect(host("http://user:pw@api.example.com:81/x") == "api.example.com")
        #expect(host("http://api.example.com?x") == "api.example.com")
        #expect(host("http://api.example.com") == "api.example.com")
        #expect(host("api.example.com:443") == "api.example.com")
        #expect(host("[2001:db8::1]:443") == "[2001:db8::1]")
        #expect(host("http://[::1]:8080/x") == "[::1]")
        #expect(host("127.0.0.1:9") == "127.0.0.1")
        #expect(host("") == "")
    }
}
