import Testing

@testable import LookoutTLS

/// The pieces the Web PKI profile reads with: DER elements, the public suffix list, names.
@Suite struct WebPKIPieceTests {
    @Test func derElementsAndTheirBounds() throws {
        // SEQUENCE { OID 2.5.29.37.0, [0] 01 02 }, then a long-form length.
        var reader = DERReader([0x30, 0x0A, 0x06, 0x04, 0x55, 0x1D, 0x25, 0x00, 0x80, 0x02, 0x01, 0x02])
        let first = reader.next()
        let sequence = try #require(first)
        #expect(sequence.tag == DERTag.sequence && reader.isAtEnd)
        var children = sequence.children
        let all = children.all()
        let parts = try #require(all)
        #expect(parts.map(\.tag) == [DERTag.objectIdentifier, DERTag.context(0, constructed: false)])
        #expect(Array(parts[0].content) == WebPKIProfile.anyExtendedKeyUsage)
        var long = DERReader([0x04, 0x81, 0x03, 0xAA, 0xBB, 0xCC])
        let element = long.next()
        #expect(element.map { Array($0.content) } == [0xAA, 0xBB, 0xCC])
        for bad: [UInt8] in [[0x30], [0x30, 0x05, 0x00], [0x04, 0x85, 1, 1, 1, 1, 1], [0x1F, 0x01, 0x00], [0x04, 0x80]] {
            var r = DERReader(bad)
            let element = r.next()
            #expect(element == nil, "\(bad)")
        }
        #expect(WebPKIProfile.isWellFormedAccess([0x30, 0x00]) == false)  // no AccessDescription
    }

    @Test func publicSuffixes() {
        let list = PublicSuffixList(text: """
        // comment
        com
        co.uk
        *.ck
        !www.ck
        s3.amazonaws.com
        """)
        #expect(list.isLoaded)
        for suffix in ["com", "co.uk", "anything.ck", "s3.amazonaws.com", "localhost"] { #expect(list.isPublicSuffix(suffix), "\(suffix)") }
        for domain in ["example.com", "example.co.uk", "www.ck", "bucket.s3.amazonaws.com"] { #expect(!list.isPublicSuffix(domain), "\(domain)") }
        #expect(!PublicSuffixList(file: "/nonexistent").isLoaded)
    }

    @Test func presentedNames() {
        for good in ["example.com", "*.example.com", "a-b.example", "xn--n3h.com", "localhost"] {
            #expect(WebPKIProfile.isValidPresentedName(good), "\(good)")
        }
        for bad in ["", "foo_bar.example.com", "-a.example", "a..example", "f*.example.com", "a.*.example", "*", "example.com."] {
            #expect(!WebPKIProfile.isValidPresentedName(bad), "\(bad)")
        }
        #expect(WebPKIProfile.looksLikeHostOrAddress("www.example.com") && WebPKIProfile.looksLikeHostOrAddress("0xC0A80101"))
        #expect(!WebPKIProfile.looksLikeHostOrAddress("Build server") && !WebPKIProfile.looksLikeHostOrAddress("Lookout Test Root"))
    }
}
