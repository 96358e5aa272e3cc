import Foundation
import Testing
import LookoutTLS

@Suite struct CertificateAuthorityTests {
    @Test func createsFilesWithModesAndReloadsThem() throws {
        let base = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let directory = base + "/state/lookout"

        let created = try CertificateAuthority.loadOrCreate(directory: directory)
        #expect(created.wasCreated)
        #expect(try Shell.permissions(directory) == 0o700)
        #expect(try Shell.permissions(directory + "/ca-key.pem") == 0o600)
        #expect(try Shell.permissions(directory + "/ca.pem") == 0o644)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(leftovers == ["ca-key.pem", "ca.pem"])

        let reloaded = try CertificateAuthority.loadOrCreate(directory: directory)
        #expect(!reloaded.wasCreated)
        #expect(reloaded.certificate == created.certificate)
        #expect(reloaded.privateKey.spkiSHA256Pin == created.privateKey.spkiSHA256Pin)
        #expect(try Shell.permissions(directory + "/ca-key.pem") == 0o600)

        let keyText = try String(contentsOfFile: directory + "/ca-key.pem", encoding: .utf8)
        #expect(keyText.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try String(contentsOfFile: directory + "/ca.pem", encoding: .utf8) == created.exportPEM())
    }

    @Test func caCertificateHasTheRightShape() throws {
        let now: Int64 = 1_800_000_000
        let authority = try CertificateAuthority.create(now: now)
        let certificate = authority.certificate
        #expect(certificate.subject.hasPrefix("CN=Lookout Local CA "))
        #expect(certificate.subject.hasSuffix(", O=Lookout"))
        let suffix = certificate.subject.dropFirst("CN=Lookout Local CA ".count).prefix(while: { $0 != "," })
        #expect(suffix.count == 8 && suffix.allSatisfy(\.isHexDigit))
        #expect(certificate.isSelfSigned)
        #expect(certificate.isCertificateAuthority)
        #expect(certificate.notBefore == now - 3600)
        #expect(certificate.notAfter == now + 3650 * 86_400)
        #expect(try CertificateAuthority.create().certificate.subject != certificate.subject)

        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Shell.write(authority.exportPEM(), to: directory + "/ca.pem")
        let text = try Shell.run("/usr/bin/openssl x509 -in '\(directory)/ca.pem' -noout -text").stdout
        #expect(text.contains("X509v3 Basic Constraints: critical\n                CA:TRUE"))
        #expect(text.contains("X509v3 Key Usage: critical\n                Certificate Sign, CRL Sign"))
        #expect(text.contains("X509v3 Subject Key Identifier"))
        #expect(text.contains("ASN1 OID: prime256v1"))
        // DER export equals openssl's conversion.
        let der = try Shell.run("/usr/bin/openssl x509 -in '\(directory)/ca.pem' -outform der | base64 -w0").stdout
        #expect(Data(base64Encoded: der.trimmingCharacters(in: .whitespacesAndNewlines)) == Data(authority.exportDER()))
    }

    @Test func leafVerifiesWithOpenSSLForNamesAndIPs() throws {
        let authority = try CertificateAuthority.create()
        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Shell.write(authority.exportPEM(), to: directory + "/ca.pem")

        let cases: [(host: String, check: String)] = [
            ("api.example.com", "-verify_hostname api.example.com"),
            ("192.0.2.7", "-verify_ip 192.0.2.7"),
            ("[2001:db8::7]", "-verify_ip 2001:db8::7"),
        ]
        for (host, check) in cases {
            let (chain, key) = try authority.issueLeaf(for: host)
            #expect(chain.count == 2)
            #expect(chain[1] == authority.certificate)
            #expect(chain[0].matches(privateKey: key))
            #expect(key.algorithmName == "EC")
            let path = "\(directory)/leaf.pem"
            try Shell.write(chain[0].pemString, to: path)
            let result = try Shell.run("/usr/bin/openssl verify -CAfile '\(directory)/ca.pem' -purpose sslserver \(check) '\(path)'")
            #expect(result.status == 0, "\(host): \(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains(": OK"))
            // And with a wrong name it must fail.
            let wrong = try Shell.run("/usr/bin/openssl verify -CAfile '\(directory)/ca.pem' -verify_hostname wrong.example.net '\(path)'")
            #expect(wrong.status != 0)
        }
    }

    @Test func leafHasTheRightShape() throws {
        let now: Int64 = 1_800_000_000
        let authority = try CertificateAuthority.create(now: now - 86_400)
        let (chain, _) = try authority.issueLeaf(for: "API.Example.com.", now: now)
        let leaf = chain[0]
        #expect(leaf.subjectAlternativeNames == [.dnsName("api.example.com")])
        #expect(leaf.subject == "CN=api.example.com, O=Lookout")
        #expect(leaf.issuer == authority.certificate.subject)
        #expect(leaf.notBefore == now - 3600)
        #expect(leaf.notAfter == now + 30 * 86_400)
        #expect(!leaf.isCertificateAuthority)
        let (ipChain, _) = try authority.issueLeaf(for: "::1", now: now)
        #expect(ipChain[0].subjectAlternativeNames == [.ipAddress("::1")])

        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Shell.write(leaf.pemString, to: directory + "/leaf.pem")
        let text = try Shell.run("/usr/bin/openssl x509 -in '\(directory)/leaf.pem' -noout -text").stdout
        #expect(text.contains("TLS Web Server Authentication"))
        #expect(text.contains("X509v3 Authority Key Identifier"))
        #expect(text.contains("CA:FALSE"))
        let serial = try Shell.run("/usr/bin/openssl x509 -in '\(directory)/leaf.pem' -noout -serial").stdout
        #expect(serial.trimmingCharacters(in: .whitespacesAndNewlines).count >= "serial=".count + 28)

        // Long names go without a CN; the SAN carries them.
        let long = String(repeating: "a", count: 60) + ".example.com"
        let (longChain, _) = try authority.issueLeaf(for: long, now: now)
        #expect(longChain[0].subject == "O=Lookout")
        #expect(longChain[0].subjectAlternativeNames == [.dnsName(long)])

        for bad in ["", "exa mple.com", "a..b", "bad/host", "x@y"] {
            #expect(throws: CertificateError.self, "\(bad)") { try authority.issueLeaf(for: bad, now: now) }
        }
    }

    @Test func leavesAreCachedInABoundedLRU() throws {
        let authority = try CertificateAuthority.create(leafCacheCapacity: 2)
        let a1 = try authority.issueLeaf(for: "a.example.com")
        let a2 = try authority.issueLeaf(for: "A.EXAMPLE.COM")
        #expect(a1.chain[0] == a2.chain[0])
        #expect(a1.key === a2.key)
        _ = try authority.issueLeaf(for: "b.example.com")
        _ = try authority.issueLeaf(for: "a.example.com")          // a is now most recent
        _ = try authority.issueLeaf(for: "c.example.com")          // evicts b
        #expect(authority.leafCache.count == 2)
        #expect(authority.leafCache.hosts == ["c.example.com", "a.example.com"])
        #expect(try authority.issueLeaf(for: "a.example.com").chain[0] == a1.chain[0])
        let now = Int64(Date().timeIntervalSince1970)
        // A leaf within a day of expiry is re-minted.
        let later = now + 29 * 86_400 + 3600
        let renewed = try authority.issueLeaf(for: "a.example.com", now: later)
        #expect(renewed.chain[0] != a1.chain[0])
    }

    @Test func cacheIsSafeUnderConcurrency() async throws {
        let authority = try CertificateAuthority.create(leafCacheCapacity: 8)
        let hosts = (0..<16).map { "h\($0 % 10).example.com" }
        try await withThrowingTaskGroup(of: String.self) { group in
            for host in hosts {
                group.addTask { try authority.issueLeaf(for: host).chain[0].subjectAlternativeNames.description }
            }
            for try await _ in group {}
        }
        #expect(authority.leafCache.count == 8)
    }

    @Test func incompleteStateIsAnErrorNotAnOverwrite() throws {
        let directory = try Shell.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let authority = try CertificateAuthority.loadOrCreate(directory: directory)
        try FileManager.default.removeItem(atPath: directory + "/ca-key.pem")
        do {
            _ = try CertificateAuthority.loadOrCreate(directory: directory)
            Issue.record("loaded without a key")
        } catch {
            #expect(error.kind == .fileSystem)
            #expect(error.message.contains("ca-key.pem"))
        }
        #expect(try Certificate.loadAll(pemFile: directory + "/ca.pem") == [authority.certificate])

        // A key that belongs to another certificate.
        try Shell.write(try PrivateKey.generateP256().pemString, to: directory + "/ca-key.pem")
        #expect(throws: CertificateError(.keyMismatch, "the private key does not belong to CA certificate \(authority.certificate.subject)")) {
            try CertificateAuthority.loadOrCreate(directory: directory)
        }
    }

    @Test func aLeafIsNotACertificateAuthority() throws {
        let pki = TestPKI.shared
        do {
            _ = try CertificateAuthority(certificate: pki.leaf, privateKey: pki.leafKey)
            Issue.record("a leaf became a CA")
        } catch {
            #expect(error.kind == .notACertificateAuthority)
        }
        let intermediateCA = try CertificateAuthority(certificate: pki.intermediate, privateKey: pki.intermediateKey)
        let (chain, _) = try intermediateCA.issueLeaf(for: "x.example.test")
        try DefaultTrustEvaluator(trustStore: try pki.trustStore()).evaluate(chain, host: "x.example.test")
    }
}
