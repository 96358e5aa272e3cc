import ArgumentParser
import LookoutTLS

/// `lookout pin`: prints the certificates a server presents (or a file holds) with their
/// `sha256/` public-key pins, ready for a trust rule's `pins:`.
struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Show a server's (or a file's) certificates and their sha256/ public-key pins.",
        discussion: """
            With HOST[:PORT] (default port 443), connects, performs a TLS handshake with SNI and \
            prints every certificate the server presented, leaf first. The chain is NOT verified: \
            this shows what is there so you can decide what to pin; check it before trusting it. \
            With --cert FILE, prints the certificates of a PEM bundle or a DER file.
            Each pin is the base64 SHA-256 of the certificate's SubjectPublicKeyInfo, the same as \
            `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`.
            """)

    @Argument(help: "HOST[:PORT]; IPv6 in brackets, e.g. [::1]:8443.")
    var target: String?

    @Option(name: .long, help: "Read certificates from FILE (PEM bundle or DER) instead of connecting.")
    var cert: String?

    @Option(name: .long, help: "Seconds to wait for the connection and the handshake.")
    var timeout: Double = 10

    func validate() throws {
        if (target == nil) == (cert == nil) {
            throw ValidationError("give either HOST[:PORT] or --cert FILE")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be greater than 0") }
    }

    func run() throws {
        let chain: [Certificate]
        if let cert {
            do {
                chain = try Certificate.loadAll(pemFile: cert)
            } catch {
                FileHandleOutput.standardError("lookout pin: \(error.message)\n")
                throw ExitCode(1)
            }
            print("\(cert) holds \(chain.count) certificate\(chain.count == 1 ? "" : "s"):")
        } else {
            let (host, port) = try Self.split(target ?? "")
            do {
                let result = try TLSProbe(host: host, port: port, timeout: timeout).run()
                chain = result.chain
                print("\(host):\(port) (\(result.address)) presented \(chain.count) certificate\(chain.count == 1 ? "" : "s") over \(result.version), \(result.cipher); not verified:")
            } catch {
                FileHandleOutput.standardError("lookout pin: \(error.description)\n")
                throw ExitCode(1)
            }
        }
        for (index, certificate) in chain.enumerated() {
            print("")
            print("[\(index)] subject:  \(certificate.subject)")
            print("    issuer:   \(certificate.issuer)")
            print("    valid:    \(ISO8601.format(certificate.notBefore)) to \(ISO8601.format(certificate.notAfter))")
            let names = certificate.subjectAlternativeNames.map(\.description)
            if !names.isEmpty { print("    names:    \(names.joined(separator: ", "))") }
            print("    pin:      \(certificate.spkiSHA256Pin)")
        }
        print("")
        print("For a trust rule (add a backup pin for the next key):")
        print("  pins: [\(chain.map { "\"\($0.spkiSHA256Pin)\"" }.joined(separator: ", "))]")
    }

    /// "host", "host:port", "[v6]", "[v6]:port".
    static func split(_ target: String) throws -> (String, Int) {
        var host = Substring(target)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw ValidationError("\(target): missing ']'") }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw ValidationError("\(target): expected :PORT after ']'") }
                portText = rest.dropFirst()
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard host.firstIndex(of: ":") == colon else {
                throw ValidationError("\(target): write IPv6 addresses in brackets, e.g. [::1]:443")
            }
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw ValidationError("\(target): no host") }
        var port = 443
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw ValidationError("\(target): the port must be 1-65535")
            }
            port = value
        }
        return (String(host), port)
    }
}
