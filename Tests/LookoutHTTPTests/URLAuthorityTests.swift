import LookoutHTTP
import Testing

/// An authority's parts, from absolute URLs, CONNECT targets and peers' addresses.
@Suite struct URLAuthorityTests {
    @Test func hostsAreFoundWithoutUserInfoOrPort() {
        #expect(URLAuthority.host(in: "http://h.test/x") == "h.test")
        #expect(URLAuthority.host(in: "https://u:p@h.test:8443/a?b=c") == "h.test")
        #expect(URLAuthority.host(in: "http://[::1]:81/") == "[::1]")
        #expect(URLAuthority.host(in: "h.test:443") == "h.test")
        #expect(URLAuthority.host(in: "http://h.test?x=@y") == "h.test")
        #expect(URLAuthority.host(in: "http://h.test#a@b") == "h.test")
        #expect(URLAuthority.host(in: "http://bücher.test/") == "bücher.test")
        #expect(URLAuthority.host(in: "") == "")
        #expect(URLAuthority.host(in: "http:") == "http")
    }

    @Test func theLayoutSaysWhereEachPartLies() {
        let url = URLAuthority.Layout("HTTPS://a@b@h.test:1/p")
        #expect(url.start == 8 && url.end == 20 && url.at == 11 && url.host == 12..<18 && url.port == 1 && url.isHTTPS)
        let target = URLAuthority.Layout("[fe80::1]:8443")
        #expect(target.start == 0 && target.host == 0..<9 && target.bareHost == 1..<8 && target.port == 8443 && !target.isHTTPS)
        // An unbracketed IPv6 address (a peer's, as written) is all host.
        #expect(URLAuthority.Layout("fe80::1").host == 0..<7 && URLAuthority.Layout("fe80::1").port == nil)
        // A port is 1 to 5 decimal digits; anything else is none.
        for bad in ["h:", "h:8x", "h:+80", "h:123456", "h: 80", "[::1]:", "[::1]x"] {
            #expect(URLAuthority.Layout(bad).port == nil, "\(bad)")
        }
        #expect(URLAuthority.Layout("http://h:65535/").port == 65535 && !URLAuthority.Layout("httpsx://h/").isHTTPS)
        // A scheme is a letter, then letters, digits, '+', '-' or '.' (RFC 3986 §3.1); the colons
        // of user info are not the port's.
        #expect(URLAuthority.Layout("svn+ssh://u:pw@h.test/").start == 10)
        #expect(URLAuthority.Layout("1http://h.test/").start == 0)
        #expect(URLAuthority.Layout("http://u:p@h.test/").port == nil && URLAuthority.Layout("http://u:p@h.test:8/").port == 8)
        #expect(URLAuthority.Layout("http://u]@[::1]:9/").bareHost == 11..<14 && URLAuthority.Layout("http://u]@[::1]:9/").port == 9)
    }
}
