import Foundation
import Testing
import LookoutTLS

@Suite struct CertificateTests {
    let pki = TestPKI.shared

    @Test func pemAndDERRoundTrip() throws {
        let fromPEM = try Certificate(pem: pki.leaf.pemString)
        let fromDER = try Certificate(der: pki.leaf.derBytes)
        #expect(fromPEM == pki.leaf)
        #expect(fromDER == pki.leaf)
        #expect(fromPEM.hashValue == pki.leaf.hashValue)
        #expect(pki.leaf.pemString.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(pki.leaf.pemString.hasSuffix("-----END CERTIFICATE-----\n"))
    }

    @Test func subjectIssuerAndDates() {
        #expect(pki.root.subject == "CN=Lookout Test Root, O=Lookout Tests")
        #expect(pki.intermediate.issuer == pki.root.subject)
        #expect(pki.leaf.subject == "CN=www.example.test")
        #expect(pki.leaf.issuer == "CN=Lookout Test Intermediate, O=Lookout Tests")
        #expect(pki.leaf.notBefore == pki.now - 86_400)
        #expect(pki.leaf.notAfter == pki.now + 90 * 86_400)
        #expect(pki.leaf.isValid(at: pki.now))
        #expect(!pki.expiredLeaf.isValid(at: pki.now))
        #expect(!pki.leaf.serialNumberHex.isEmpty)
    }

    @Test func subjectAlternativeNames() {
        #expect(pki.leaf.subjectAlternativeNames == [.dnsName("www.example.test"), .dnsName("example.test")])
        #expect(pki.ipLeaf.subjectAlternativeNames == [.ipAddress("127.0.0.1"), .ipAddress("::1")])
        #expect(pki.root.subjectAlternativeNames.isEmpty)
        #expect(SubjectAlternativeName(host: "[::1]") == .ipAddress("::1"))
        #expect(SubjectAlternativeName(host: "Example.COM.") == .dnsName("example.com"))
        #expect(SubjectAlternativeName.ipAddress("10.0.0.1").description == "IP:10.0.0.1")
    }

    @Test func selfSignedAndCAFlags() {
        #expect(pki.root.isSelfSigned)
        #expect(pki.selfSignedLeaf.isSelfSigned)
        #expect(!pki.intermediate.isSelfSigned)
        #expect(!pki.leaf.isSelfSigned)
        #expect(pki.root.isCertificateAuthority)
        #expect(pki.intermediate.isCertificateAuthority)
        #expect(!pki.leaf.isCertificateAuthority)
        #expect(pki.leaf.matches(privateKey: pki.leafKey))
        #expect(!pki.leaf.matches(privateKey: pki.otherKey))
    }

    @Test func pinsEqualOpenSSLPipeline() throws {
        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (index, certificate) in [pki.root, pki.intermediate, pki.leaf, pki.ipLeaf].enumerated() {
            let path = "\(directory)/cert\(index).pem"
            try Shell.write(certificate.pemString, to: path)
            let expected = try Shell.opensslPin(certificateFile: path)
            #expect(certificate.spkiSHA256Pin == expected)
            #expect(certificate.spkiSHA256Pin.hasPrefix("sha256/"))
            #expect(certificate.spkiSHA256Pin.count == "sha256/".count + 44)
        }
        // The key's pin equals its certificate's, and openssl's from the key file.
        #expect(pki.leafKey.spkiSHA256Pin == pki.leaf.spkiSHA256Pin)
        let keyPath = "\(directory)/key.pem"
        try Shell.write(pki.leafKey.pemString, to: keyPath)
        let fromKey = try Shell.run("/usr/bin/openssl pkey -in '\(keyPath)' -pubout -outform der | /usr/bin/openssl dgst -sha256 -binary | base64")
        #expect(pki.leafKey.spkiSHA256Pin == "sha256/" + fromKey.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func fingerprintEqualsOpenSSL() throws {
        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/leaf.pem"
        try Shell.write(pki.leaf.pemString, to: path)
        let output = try Shell.run("/usr/bin/openssl x509 -in '\(path)' -noout -fingerprint -sha256")
        #expect(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix("=" + pki.leaf.sha256Fingerprint))
    }

    @Test func loadAllReadsBundlesAndDERFiles() throws {
        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = "\(directory)/bundle.pem"
        try Shell.write("# a comment\n" + pki.leaf.pemString + "\n" + pki.intermediate.pemString + pki.root.pemString, to: bundle)
        #expect(try Certificate.loadAll(pemFile: bundle) == [pki.leaf, pki.intermediate, pki.root])
        #expect(try Certificate.loadAll(pem: pki.root.pemString + pki.leaf.pemString) == [pki.root, pki.leaf])

        let der = "\(directory)/leaf.der"
        try Data(pki.leaf.derBytes).write(to: URL(fileURLWithPath: der))
        #expect(try Certificate.loadAll(pemFile: der) == [pki.leaf])

        let empty = "\(directory)/empty.pem"
        try Shell.write("nothing here\n", to: empty)
        #expect(throws: CertificateError.self) { try Certificate.loadAll(pemFile: empty) }
        #expect(throws: CertificateError.self) { try Certificate.loadAll(pemFile: "\(directory)/missing.pem") }
    }

    @Test func systemBundleLoads() throws {
        guard FileManager.default.fileExists(atPath: TrustStore.systemBundlePath) else { return }
        let store = try TrustStore()
        #expect(store.anchors.count > 50)
        let withExtra = try TrustStore(additionalCertificates: [pki.root])
        #expect(withExtra.anchors.count == store.anchors.count + 1)
    }

    @Test func invalidInputIsAnError() {
        do {
            _ = try Certificate(pem: "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
            Issue.record("garbage PEM parsed")
        } catch {
            #expect(error.kind == .invalidPEM)
            #expect(error.message.contains("error:"))
        }
        #expect(throws: CertificateError.self) { try Certificate(der: [0x30, 0x03, 0x01, 0x01, 0x00]) }
        #expect(throws: CertificateError.self) { try Certificate(der: pki.leaf.derBytes + [0]) }
        #expect(throws: CertificateError.self) { try PrivateKey(pem: pki.leaf.pemString) }
    }

    @Test func privateKeyPEMRoundTrip() throws {
        let key = try PrivateKey.generateP256()
        #expect(key.algorithmName == "EC")
        #expect(key.pemString.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let reloaded = try PrivateKey(pem: key.pemString)
        #expect(reloaded.spkiSHA256Pin == key.spkiSHA256Pin)
        #expect(reloaded.pemString == key.pemString)
        #expect(try PrivateKey.generateP256().spkiSHA256Pin != key.spkiSHA256Pin)
    }

    @Test func keyFromOpenSSLCLIIsReadable() throws {
        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/rsa.pem"
        let generated = try Shell.run("/usr/bin/openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out '\(path)' 2>/dev/null")
        #expect(generated.status == 0)
        let key = try PrivateKey(pem: String(contentsOfFile: path, encoding: .utf8))
        #expect(key.algorithmName == "RSA")
        // An RSA leaf signed by the EC intermediate gets keyEncipherment too.
        let leaf = try CertificateBuilder(commonName: "rsa.example.test", notBefore: pki.now - 60, notAfter: pki.now + 3600,
                                          subjectAlternativeNames: [.dnsName("rsa.example.test")])
            .signed(publicKeyOf: key, issuer: pki.intermediate, issuerKey: pki.intermediateKey)
        #expect(leaf.matches(privateKey: key))
    }
}
