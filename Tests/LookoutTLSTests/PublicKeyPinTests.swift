import Testing
import LookoutTLS

@Suite struct PublicKeyPinTests {
    let pki = TestPKI.shared

    @Test func parsesOkHttpAndCurlSpellings() throws {
        let text = pki.leaf.spkiSHA256Pin
        let okhttp = try PublicKeyPin(text)
        let base64 = String(text.dropFirst("sha256/".count))
        let curl = try PublicKeyPin("sha256//" + base64)
        let upper = try PublicKeyPin("  SHA256/" + base64 + "\n")
        #expect(okhttp == curl)
        #expect(okhttp == upper)
        #expect(okhttp == pki.leaf.publicKeyPin)
        #expect(okhttp.digest.count == 32)
        #expect(curl.description == text)
        #expect(String(describing: okhttp).hasPrefix("sha256/"))
        // Unpadded base64 is accepted.
        #expect(try PublicKeyPin("sha256/" + base64.dropLast()) == okhttp)
    }

    @Test func base64StartingWithSlashIsNotMistakenForCurlSyntax() throws {
        let pin = try PublicKeyPin(sha256Digest: [0xFC] + [UInt8](repeating: 7, count: 31))
        #expect(pin.description.hasPrefix("sha256//"))          // OkHttp form, base64 begins with "/"
        #expect(try PublicKeyPin(pin.description) == pin)
        let base64 = pin.description.dropFirst("sha256/".count)
        #expect(try PublicKeyPin("sha256//" + base64) == pin)    // curl form: "sha256///…"
        #expect(try PublicKeyPin("sha256/" + base64.dropLast()) == pin)   // unpadded
    }

    @Test func rejectsMalformedPins() {
        for bad in ["", "sha256", "sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "sha256/not*base64",
                    "sha256/AAAA", // 3 bytes
                    "sha256/" + String(repeating: "A", count: 64), // 48 bytes
                    "pin-sha256=\"abc\""] {
            #expect(throws: CertificateError.self, "\(bad)") { try PublicKeyPin(bad) }
        }
        do {
            _ = try PublicKeyPin("sha256/AAAA")
        } catch {
            #expect(error.kind == .invalidPin)
            #expect(error.message.contains("32 bytes"))
        }
        #expect(throws: CertificateError.self) { try PublicKeyPin(sha256Digest: [1, 2, 3]) }
    }

    @Test func distinctKeysHaveDistinctPins() {
        #expect(pki.leaf.publicKeyPin != pki.otherKeyLeaf.publicKeyPin)
        #expect(pki.leaf.publicKeyPin == pki.expiredLeaf.publicKeyPin)  // same key
        #expect(Set([pki.leaf.publicKeyPin, pki.expiredLeaf.publicKeyPin, pki.root.publicKeyPin]).count == 2)
    }
}
