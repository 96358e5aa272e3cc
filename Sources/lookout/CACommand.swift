import ArgumentParser
import Foundation
import LookoutTLS

/// `lookout ca …`: the local certificate authority that signs the leaves of intercepted hosts.
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca", abstract: "Create or export Lookout's local CA (for TLS interception).",
        subcommands: [Init.self, Export.self])

    struct Location: ParsableArguments {
        @Option(name: .long, help: "The state folder holding ca.pem and ca-key.pem (default: state_dir from the config).")
        var stateDir: String?

        @Option(name: .long, help: "Config file to take state_dir from (default: the one `lookout run` uses).")
        var config: String?

        var directory: String { StateDirectory.resolve(stateDirectory: stateDir, configPath: config) }
    }

    /// `lookout ca init`: creates the CA unless it exists; never replaces one.
    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the CA (ca.pem, and ca-key.pem with mode 0600) unless it already exists.")

        @OptionGroup var location: Location

        func run() throws {
            let directory = location.directory
            let authority: CertificateAuthority
            do {
                authority = try CertificateAuthority.loadOrCreate(directory: directory)
            } catch {
                FileHandleOutput.standardError("lookout ca init: \(error.message)\n")
                throw ExitCode(1)
            }
            let path = (directory as NSString).appendingPathComponent(CertificateAuthority.certificateFileName)
            let certificate = authority.certificate
            print(authority.wasCreated ? "created the Lookout CA: \(path)" : "the Lookout CA already exists: \(path)")
            print("  subject:     \(certificate.subject)")
            print("  valid:       \(ISO8601.format(certificate.notBefore)) to \(ISO8601.format(certificate.notAfter))")
            print("  sha256:      \(certificate.sha256Fingerprint)")
            print("Clients must trust it; `lookout ca export` prints it (see the README for curl, Python, Node and Debian).")
        }
    }

    /// `lookout ca export`: the CA certificate as PEM or DER; never creates one.
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the CA certificate (PEM by default) for clients to trust.")

        @OptionGroup var location: Location

        @Flag(name: .long, help: "DER instead of PEM.")
        var der = false

        @Option(name: .long, help: "Write to FILE instead of standard output.")
        var output: String?

        func run() throws {
            let directory = location.directory
            let path = (directory as NSString).appendingPathComponent(CertificateAuthority.certificateFileName)
            guard FileManager.default.fileExists(atPath: path) else {
                FileHandleOutput.standardError("lookout ca export: there is no CA in \(directory) yet; create it with `lookout ca init` (or run the proxy with interception.hosts set)\n")
                throw ExitCode(1)
            }
            let certificate: Certificate
            do {
                certificate = try Certificate.loadAll(pemFile: path)[0]
            } catch {
                FileHandleOutput.standardError("lookout ca export: \(error.message)\n")
                throw ExitCode(1)
            }
            let bytes = der ? certificate.derBytes : Array(certificate.pemString.utf8)
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: Data(bytes)) else {
                    FileHandleOutput.standardError("lookout ca export: cannot write \(output)\n")
                    throw ExitCode(1)
                }
            } else {
                FileHandle.standardOutput.write(Data(bytes))
            }
        }
    }
}

/// Unix seconds as "2026-11-22T15:04:05Z".
enum ISO8601 {
    static func format(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
