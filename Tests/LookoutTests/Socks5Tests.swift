import Testing
@testable import Lookout

/// The SOCKS5 messages as `Socks5` reads them, byte by byte (RFC 1928, RFC 1929).
struct Socks5Tests {
    @Test func greetingWaitsForItsMethods() {
        guard case .needMore = Socks5.greeting([5, 2, 0][...]) else { Issue.record("needs the second method"); return }
        guard case .done(let methods, let consumed) = Socks5.greeting([5, 2, 0, 2, 9][...]) else { Issue.record(); return }
        #expect(methods == [0, 2] && consumed == 4)
        guard case .invalid(let why) = Socks5.greeting([4, 1, 0][...]) else { Issue.record(); return }
        #expect(why.contains("SOCKS4"))
    }

    @Test func requestsReadEachAddressType() {
        func read(_ bytes: [UInt8]) -> Socks5.Request? {
            guard case .done(.success(let request), let consumed) = Socks5.request(bytes[...]), consumed == bytes.count else { return nil }
            return request
        }
        #expect(read([5, 1, 0, 1, 127, 0, 0, 1, 0x1F, 0x90]) == Socks5.Request(command: 1, host: "127.0.0.1", port: 8080))
        #expect(read([5, 1, 0, 3, 9] + Array("a.example".utf8) + [1, 187]) == Socks5.Request(command: 1, host: "a.example", port: 443))
        #expect(read([5, 2, 0, 4] + [UInt8](repeating: 0, count: 15) + [1, 0, 80])
            == Socks5.Request(command: 2, host: "::1", port: 80))
        guard case .needMore = Socks5.request([5, 1, 0, 3, 9, 97][...]) else { Issue.record("a cut name needs more"); return }
        guard case .done(.failure(let error), _) = Socks5.request([5, 1, 0, 7, 0, 0][...]) else { Issue.record(); return }
        #expect(error.reply == .addressTypeNotSupported)
    }

    @Test func credentialsAndReplies() {
        guard case .done(let credentials, 11) = Socks5.credentials([1, 5] + Array("alice".utf8) + [3] + Array("pw!".utf8)) else {
            Issue.record(); return
        }
        #expect(credentials.user == "alice" && credentials.password == "pw!")
        #expect(Socks5.reply(.commandNotSupported) == [5, 7, 0, 1, 0, 0, 0, 0, 0, 0])
    }

    @Test func hostFieldsNameTheirHost() {
        #expect(ClientConnection.hostName(inHostField: "Example.com:8080") == "example.com")
        #expect(ClientConnection.hostName(inHostField: "[::1]:80") == "::1")
        #expect(ClientConnection.hostName(inHostField: "a.test") == "a.test")
        #expect(ClientConnection.startsHTTPRequest(Array("GET / HTTP/1.1".utf8)) == true)
        #expect(ClientConnection.startsHTTPRequest(Array("GE".utf8)) == nil)
        #expect(ClientConnection.startsHTTPRequest([0x16, 3, 1]) == false)
        #expect(ClientConnection.startsHTTPRequest(Array("SSH-2.0-OpenSSH".utf8)) == false)
    }
}
