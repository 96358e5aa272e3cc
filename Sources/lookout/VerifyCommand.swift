import ArgumentParser
import LookoutLogQuery
import LookoutTLS

extension TrustProfile: ExpressibleByArgument {}

/// `lookout verify`: judges a certificate chain for a host exactly as a trust rule's `default`
/// evaluator does on a live connection (the same `DefaultTrustEvaluator`, trust store and
/// checks), so a chain can be tested — or a public validation suite run — without a server.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a certificate chain for a host as the default trust evaluator does.",
        discussion: """
            Exits 0 when the chain is valid for the host, 1 when it is not (the reason code \
            Lookout logs, then the message), 2 when an input cannot be read. The chain file holds \
            the leaf first, then the intermediates the server would present. Without --roots, \
            the system bundle is the trust anchors (as with trust.system_roots); with it, only \
            ROOTS.pem, judged like ca_files (an intermediate there is an anchor too). The profile \
            follows the anchor as on a live connection (webpki for the system bundle, rfc5280 for \
            --roots) unless --profile names one; the verdict names the profile that decided.
            """)

    @Option(name: .long, help: "PEM file: the leaf certificate, then any intermediates.")
    var chain: String

    @Option(name: .long, help: "The host name or IP address the chain must be valid for.")
    var host: String

    @Option(name: .long, help: "PEM file of trust anchors (default: the system bundle).")
    var roots: String?

    @Option(name: .long, help: "Judge at this time (RFC 3339, e.g. 2026-11-26T12:00:00Z) instead of now.")
    var time: String?

    @Option(name: .long, help: "The purpose the leaf must serve: server (TLS server authentication).")
    var purpose: String = "server"

    @Option(name: .long, help: "The certificate profile: webpki or rfc5280 (default: by the anchor, as trust rules do).")
    var profile: TrustProfile?

    func validate() throws {
        guard purpose == "server" else { throw ValidationError("--purpose: only \"server\" is supported") }
        if let time, LogTime.timestamp(time) == nil {
            throw ValidationError("--time: expected RFC 3339, e.g. 2026-11-26T12:00:00Z")
        }
    }

    func run() throws {
        let presented: [Certificate]
        let store: TrustStore
        do throws(CertificateError) {
            presented = try Certificate.loadAll(pemFile: chain)
            if let roots {
                store = try TrustStore(systemBundle: nil, additionalCAFiles: [roots], allowsPartialChains: true)
            } else {
                store = try TrustStore(allowsPartialChains: true)
            }
        } catch {
            FileHandleOutput.standardError("lookout verify: \(error.message)\n")
            throw ExitCode(2)
        }
        let now = time.flatMap(LogTime.timestamp).map { $0 / 1_000_000 } ?? UnixTime.now()
        do {
            let judged = try DefaultTrustEvaluator(trustStore: store, profile: profile)
                .evaluateUnderProfile(presented, host: host, now: now, stapledOCSPResponse: nil)
            print("valid: \(presented.count) certificate\(presented.count == 1 ? "" : "s") for \(host), leaf \(presented[0].subject), profile \(judged?.rawValue ?? "none")")
        } catch {
            print("invalid: \(error.reason.rawValue): \(error.message) (profile \(error.profile?.rawValue ?? "none"))")
            throw ExitCode(1)
        }
    }
}
