import Testing
@testable import LookoutTLS

/// `HostRuleSet` is an index, not a scan: the same answers as "most specific first" for every
/// kind of pattern and every spelling of a host.
@Suite struct HostRuleSetIndexTests {
    private func set(_ patterns: [String]) throws -> HostRuleSet<String> {
        HostRuleSet(try patterns.map { ([try HostPattern($0)], $0) })
    }

    @Test func theMostSpecificPatternWinsWhateverTheOrder() throws {
        let patterns = ["**", "**.example.com", "**.api.example.com", "*.api.example.com", "v1.api.example.com",
                        "*.example.com", "192.0.2.1", "2001:db8::1"]
        for rules in [patterns, patterns.reversed()] {
            let set = try set(Array(rules))
            #expect(set.rule(for: "v1.api.example.com") == "v1.api.example.com")
            #expect(set.rule(for: "V2.API.Example.COM.") == "*.api.example.com")
            #expect(set.rule(for: "a.v2.api.example.com") == "**.api.example.com")
            #expect(set.rule(for: "www.example.com") == "*.example.com")
            #expect(set.rule(for: "a.b.example.com") == "**.example.com")
            #expect(set.rule(for: "example.com") == "**")
            #expect(set.rule(for: "192.0.2.1") == "192.0.2.1")
            #expect(set.rule(for: "[2001:DB8:0:0::1]") == "2001:db8::1")
            #expect(set.rule(for: "192.0.2.2") == "**")  // wildcards never match an address
            #expect(set.rule(for: "other.org") == "**")
        }
    }

    @Test func tiesGoToTheRuleListedFirstAndNothingMatchesAnEmptySet() throws {
        let set = HostRuleSet([([try HostPattern("*.example.com")], "first"), ([try HostPattern("*.example.com")], "second")])
        #expect(set.rule(for: "a.example.com") == "first")
        #expect(set.rule(for: "a..example.com") == nil)
        #expect(HostRuleSet<String>.empty.rule(for: "a.example.com") == nil)
        #expect(try self.set(["*.example.com"]).rule(for: "example.com") == nil)
    }
}

/// `HostName.isIPv4Literal` copies the host to a stack buffer for `inet_pton`: it must answer as
/// `inet_pton` does on the whole text, at and past the 15-byte longest literal.
@Suite struct IPv4LiteralTests {
    @Test(arguments: [
        ("127.0.0.1", true), ("0.0.0.0", true), ("255.255.255.255", true), ("192.0.2.1", true),
        ("256.1.1.1", false), ("1.2.3", false), ("1.2.3.4.5", false), ("1.2.3.4 ", false), ("", false),
        ("1111.111.111.111", false), ("255.255.255.2555", false), ("example.com", false), ("::1", false),
        ("a-very-long-host-name.example.com", false), ("1.2.3.4\u{0}5", false),
    ])
    func answersAsInetPtonDoes(host: String, expected: Bool) {
        #expect(HostName.isIPv4Literal(host) == expected)
    }

    /// The same buffer serves `ipAddressBytes`, with IPv6 literals up to 45 bytes and brackets.
    @Test(arguments: [
        ("2001:db8::1", 16), ("[2001:DB8::1]", 16), ("[1.2.3.4]", 4), ("192.0.2.1", 4),
        ("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", 16), ("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.2555", 0),
        ("::1\u{0}", 0), ("[]", 0), ("example.com", 0), ("2001:db8::g", 0),
    ])
    func addressBytesAnswerAsInetPtonDoes(host: String, byteCount: Int) {
        #expect(HostName.ipAddressBytes(host)?.count ?? 0 == byteCount)
    }
}
