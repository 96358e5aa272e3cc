import ArgumentParser
import Foundation
import LookoutConfig
import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream
import Yams

/// `lookout policy test|explain`: the egress policy evaluated from the config file alone, without
/// starting a proxy — for CI, and for a person asking why.
struct PolicyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy", abstract: "Check the egress policy offline: a table of cases, or one request explained.",
        subcommands: [PolicyTestCommand.self, PolicyExplainCommand.self])
}

/// A client, a method and a URL, judged by the config's `access` and `policy`.
struct PolicyQuestion {
    var user: String?
    var client: SocketAddress?
    var method: String
    var url: String

    struct Answer {
        var decision: String
        var role: String
        var identity: String
        var mode: String
        var rule: String
        var reason: String
    }

    /// Report-mode roles are judged as enforce would judge them (`would_deny` is a deny here):
    /// the table is the policy's meaning, whatever its mode today. Rates and in-flight limits
    /// are not counted.
    func answer(_ file: LookoutConfiguration) throws(ValidationError) -> Answer {
        guard let host = URL(string: url)?.host, !host.isEmpty else { throw ValidationError("\(url) is not a URL with a host") }
        let key = HostRuleKey(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
        let isConnect = method.uppercased() == "CONNECT"
        if let refusal = AccessPolicy(file.access).refusal(method: isConnect ? "GET" : method, host: key) {
            return Answer(decision: "deny", role: "-", identity: "-", mode: "enforce", rule: "access", reason: refusal.message)
        }
        guard file.policy.isConfigured else {
            return Answer(decision: "allow", role: "-", identity: "-", mode: "-", rule: "-", reason: "no policy is configured")
        }
        let policy = EgressPolicy(file.policy)
        let (role, identity) = policy.role(user: user, client: client)
        let (decision, _) = policy.decide(role, identity: identity, method: isConnect ? nil : method, host: key, limits: false)
        return Answer(decision: decision.wouldDeny ? "deny" : decision.decision, role: decision.role, identity: decision.identity,
                      mode: decision.mode, rule: decision.rule, reason: decision.reason)
    }

    /// `user:NAME`, `client:ADDRESS`, both joined by a comma, or empty for an anonymous client.
    static func identity(_ text: String) throws(ValidationError) -> (user: String?, client: SocketAddress?) {
        var user: String?, client: SocketAddress?
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !part.isEmpty {
            if part.hasPrefix("user:") {
                user = String(part.dropFirst(5))
            } else if part.hasPrefix("client:") {
                guard let address = SocketAddress(ip: String(part.dropFirst(7)), port: 0) else {
                    throw ValidationError("\(part): expected client:IP-ADDRESS")
                }
                client = address
            } else {
                throw ValidationError("identity \"\(part)\": expected user:NAME or client:ADDRESS")
            }
        }
        return (user, client)
    }
}

func loadPolicyConfiguration(_ path: String?) throws -> LookoutConfiguration {
    guard let path = path ?? ConfigurationLoader.defaultConfigurationPath() else { return LookoutConfiguration() }
    do {
        return try ConfigurationLoader.load(contentsOf: path)
    } catch {
        FileHandleOutput.standardError("\(error.description)\n")
        throw ExitCode(78)
    }
}

struct PolicyTestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Check a table of cases ({identity, method, url, expect: allow|deny}, YAML); exit 1 on any mismatch.")

    @Option(name: .long, help: "The config file (default: the one `lookout run` would use).") var config: String?
    @Argument(help: "The cases: a YAML list of {identity: \"user:NAME\" | \"client:ADDRESS\" | \"\", method, url, expect}.")
    var file: String

    func run() throws {
        let configuration = try loadPolicyConfiguration(config)
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            FileHandleOutput.standardError("lookout policy test: cannot read \(file)\n")
            throw ExitCode(66)
        }
        guard let cases = (try? Yams.load(yaml: text)) as? [[String: Any]] else {
            FileHandleOutput.standardError("lookout policy test: \(file) must be a YAML list of {identity, method, url, expect} mappings\n")
            throw ExitCode(65)
        }
        var mismatches = 0
        for (index, entry) in cases.enumerated() {
            let label = "\(file): case \(index + 1)"
            guard let url = entry["url"] as? String, let expect = entry["expect"] as? String, ["allow", "deny"].contains(expect) else {
                FileHandleOutput.standardError("\(label): needs url and expect (allow or deny)\n")
                throw ExitCode(65)
            }
            let identityText = entry["identity"] as? String ?? ""
            let method = (entry["method"] as? String ?? "GET").uppercased()
            let (user, client) = try PolicyQuestion.identity(identityText)
            let answer = try PolicyQuestion(user: user, client: client, method: method, url: url).answer(configuration)
            if answer.decision != expect {
                mismatches += 1
                print("\(label): \(identityText.isEmpty ? "anonymous" : identityText) \(method) \(url): expected \(expect), "
                      + "got \(answer.decision) (role \(answer.role), rule \(answer.rule): \(answer.reason))")
            }
        }
        print("\(cases.count - mismatches) of \(cases.count) cases as expected")
        if mismatches > 0 { throw ExitCode(1) }
    }
}

struct PolicyExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain", abstract: "Print the role, rule and decision for one request.")

    @Option(name: .long, help: "The config file (default: the one `lookout run` would use).") var config: String?
    @Option(name: .long, help: "The auth.users name the client authenticates as.") var user: String?
    @Option(name: .long, help: "The client's address.") var client: String?
    @Option(name: .long, help: "The method (CONNECT: a tunnel).") var method = "GET"
    @Argument(help: "The URL.") var url: String

    func run() throws {
        let configuration = try loadPolicyConfiguration(config)
        var address: SocketAddress?
        if let client {
            guard let parsed = SocketAddress(ip: client, port: 0) else { throw ValidationError("--client wants an IP address") }
            address = parsed
        }
        let answer = try PolicyQuestion(user: user, client: address, method: method.uppercased(), url: url).answer(configuration)
        print("""
            role:     \(answer.role) (\(answer.identity))
            mode:     \(answer.mode)
            rule:     \(answer.rule)
            decision: \(answer.decision)\(answer.mode == "report" && answer.decision == "deny" ? " (report mode: forwarded, recorded as would_deny)" : "")
            reason:   \(answer.reason)
            """)
    }
}
