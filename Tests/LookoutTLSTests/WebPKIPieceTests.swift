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

/// A certificate whose key OpenSSL cannot load (an input of the tls_pem_der fuzz target) still
/// has a pin, read from the SubjectPublicKeyInfo as written.
@Suite struct UnloadableKeyTests {
    /// The fuzzer's input: a P-256 certificate whose EC point does not decode.
    static let der: [UInt8] = {
        let hex = [
            "3082019b30820142a00302010202145a4956d0cbbb36e2b84b6d83ddfd27f3a5de41ce300a06082a8648ce3d04030230",
            "173115301306035504030c0c66757a7a2e6578616d706c65301e170d3236313132363233333233355a170d3236313132",
            "373233333233355a30173115301306035504030c0c66757a7a2e6578616d706c653059301306072a8648ce3d02010608",
            "2a8648ce3d030107034200042cd865ec218d24e927d0aab8df9db0b8765ec45e1dd1d58996d5cd64462e1f42d9f3e40d",
            "9b7c37d9b73caeb61630991160c5e5d358fd137db2f4886f15dda326a36c306a301d0603551d0e04160414d70ab48343",
            "d75241893f4673c781ebc3f7f58b94301f0603551d23041830168014d70ab48343d75241893f4673c789ebc3f7f58b94",
            "300f0603551d130101ff040530030101ff30170603551d110410300e820c66757a7a2e6578616d706c65300a06082a86",
            "48ce3d040302034700300a06082a8648ce3d0403020347003044022062b462f79d767a35e91fad6f9e1abdd4e6c2686f",
            "e84ae8ab1b8261d222db04e1f8809eddb699811033b5e39d138b0198820513",
        ].joined()
        return stride(from: 0, to: hex.count, by: 2).map { i in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
    }()

    @Test func aCertificateWithAnUnloadableKeyHasAPin() throws {
        let certificate = try Certificate(der: Self.der)
        #expect(certificate.spkiSHA256Pin.hasPrefix("sha256/") && certificate.spkiSHA256Pin.count == 51)
        #expect(certificate.publicKeyShape.type == 0)
    }
}
