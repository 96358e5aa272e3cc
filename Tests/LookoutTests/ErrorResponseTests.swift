import Testing
@testable import Lookout
import LookoutModel

/// Lookout's own error responses: the status line, the code header, the body naming the code.
@Suite struct ErrorResponseTests {
    @Test func proxyAuthenticationChallengesWithBasic() {
        let text = String(decoding: ErrorResponse.bytes(for: .requestRejected(reason: .proxyAuthenticationRequired),
                                                        closeConnection: true), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 407 Proxy Authentication Required\r\n"))
        #expect(text.contains("Proxy-Authenticate: Basic realm=\"lookout\", charset=\"UTF-8\"\r\n"))
    }

    @Test func errorResponseCarriesCodeAndStatus() {
        let bytes = ErrorResponse.bytes(for: .requestRejected(reason: .connectPortNotAllowed(port: 25)), closeConnection: true)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(text.contains("X-Lookout-Error: connect_port_not_allowed\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.hasSuffix("\r\n\r\nlookout: connect_port_not_allowed: CONNECT to port 25 is not allowed (connect.allowed_ports)\n"))
    }
}
