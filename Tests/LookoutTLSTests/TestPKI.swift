import Foundation
import LookoutTLS

/// A throw-away PKI built with the library itself at test time: a root, an intermediate,
/// and leaves for every way a server certificate can be right or wrong.
struct TestPKI: Sendable {
    static let shared: TestPKI = try! TestPKI()

    static let host = "www.example.test"

    let now: Int64
    let rootKey: PrivateKey
    let root: Certificate
    let intermediateKey: PrivateKey
    let intermediate: Certificate
    let leafKey: PrivateKey
    let leaf: Certificate
    let expiredLeaf: Certificate
    let notYetValidLeaf: Certificate
    let wrongHostLeaf: Certificate
    let selfSignedLeaf: Certificate
    let otherKey: PrivateKey
    let otherKeyLeaf: Certificate
    let ipLeaf: Certificate
    let wildcardLeaf: Certificate
    let otherRootKey: PrivateKey
    let otherRoot: Certificate
    let untrustedLeaf: Certificate

    init() throws {
        let now = Int64(Date().timeIntervalSince1970)
        self.now = now
        let day: Int64 = 86_400

        rootKey = try PrivateKey.generateP256()
        root = try CertificateBuilder(commonName: "Lookout Test Root", organization: "Lookout Tests",
                                      notBefore: now - day, notAfter: now + 3650 * day,
                                      isCertificateAuthority: true).selfSigned(with: rootKey)
        intermediateKey = try PrivateKey.generateP256()
        intermediate = try CertificateBuilder(commonName: "Lookout Test Intermediate", organization: "Lookout Tests",
                                              notBefore: now - day, notAfter: now + 1000 * day,
                                              isCertificateAuthority: true)
            .signed(publicKeyOf: intermediateKey, issuer: root, issuerKey: rootKey)

        let issuer = intermediate
        let issuerKey = intermediateKey
        func leafFor(_ names: [SubjectAlternativeName], key: PrivateKey, notBefore: Int64 = now - day,
                     notAfter: Int64 = now + 90 * day, cn: String = TestPKI.host) throws -> Certificate {
            try CertificateBuilder(commonName: cn, notBefore: notBefore, notAfter: notAfter, subjectAlternativeNames: names)
                .signed(publicKeyOf: key, issuer: issuer, issuerKey: issuerKey)
        }
        leafKey = try PrivateKey.generateP256()
        let names: [SubjectAlternativeName] = [.dnsName(TestPKI.host), .dnsName("example.test")]
        leaf = try leafFor(names, key: leafKey)
        expiredLeaf = try leafFor(names, key: leafKey, notBefore: now - 60 * day, notAfter: now - day)
        notYetValidLeaf = try leafFor(names, key: leafKey, notBefore: now + day, notAfter: now + 60 * day)
        wrongHostLeaf = try leafFor([.dnsName("other.example.test")], key: leafKey, cn: "other.example.test")
        selfSignedLeaf = try CertificateBuilder(commonName: TestPKI.host, notBefore: now - day, notAfter: now + 90 * day,
                                                subjectAlternativeNames: names).selfSigned(with: leafKey)
        otherKey = try PrivateKey.generateP256()
        otherKeyLeaf = try leafFor(names, key: otherKey)
        ipLeaf = try leafFor([.ipAddress("127.0.0.1"), .ipAddress("::1")], key: leafKey, cn: "127.0.0.1")
        wildcardLeaf = try leafFor([.dnsName("*.example.test")], key: leafKey, cn: "*.example.test")
        otherRootKey = try PrivateKey.generateP256()
        otherRoot = try CertificateBuilder(commonName: "Some Other Root", notBefore: now - day, notAfter: now + 3650 * day,
                                           isCertificateAuthority: true).selfSigned(with: otherRootKey)
        untrustedLeaf = try CertificateBuilder(commonName: TestPKI.host, notBefore: now - day, notAfter: now + 90 * day,
                                               subjectAlternativeNames: names)
            .signed(publicKeyOf: leafKey, issuer: otherRoot, issuerKey: otherRootKey)
    }

    /// A store trusting only the test root.
    func trustStore() throws -> TrustStore {
        try TrustStore(anchors: [root])
    }
}

/// Runs /usr/bin/openssl and files in a temporary directory.
enum Shell {
    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `command` with /bin/sh -c and returns its exit status and output.
    @discardableResult
    static func run(_ command: String) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus,
                      stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// A new empty directory under the system temporary directory.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "lookout-tls-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Writes `text` to `path`.
    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The pin openssl computes for a PEM certificate file.
    static func opensslPin(certificateFile: String) throws -> String {
        let output = try run("/usr/bin/openssl x509 -in '\(certificateFile)' -pubkey -noout | /usr/bin/openssl pkey -pubin -outform der | /usr/bin/openssl dgst -sha256 -binary | base64")
        return "sha256/" + output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Permission bits of `path`.
    static func permissions(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}
