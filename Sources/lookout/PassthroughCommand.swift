import ArgumentParser
import Foundation
import Lookout
import LookoutAdmin

/// `lookout passthrough list|forget HOST|clear`: the (client JA4, host) pairs that
/// `interception.learn_passthrough` tunnels blindly. A running proxy reads the file again when it
/// changes, so `forget` restores interception for the next connection.
struct PassthroughCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passthrough", abstract: "List or forget the clients tunnelled blindly because they refused Lookout's certificate.",
        subcommands: [List.self, Forget.self, Clear.self])

    struct Location: ParsableArguments {
        @Option(name: .long, help: "The state folder (default: state_dir from the config).")
        var stateDir: String?

        @Option(name: .long, help: "Config file to take state_dir from (default: the one `lookout run` uses).")
        var config: String?

        var store: PassthroughStore {
            PassthroughStore(path: StateDirectory.resolve(stateDirectory: stateDir, configPath: config) + "/passthrough.json")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print each host, client JA4, the alert and when it was learned.")
        @OptionGroup var location: Location

        func run() throws {
            let entries = location.store.entries
            if entries.isEmpty { print("no client is tunnelled blindly") }
            for entry in entries.sorted(by: { ($0.host, $0.ja4) < ($1.host, $1.ja4) }) {
                print("\(entry.host)  \(entry.ja4)  \(entry.alert)  \(entry.learnedAt)")
            }
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Intercept HOST's clients again.")
        @OptionGroup var location: Location
        @Argument(help: "The host, as the CONNECT named it.") var host: String

        func run() throws {
            let count = location.store.forget(host: host)
            print(count == 0 ? "nothing learned for \(host)" : "forgot \(count) client\(count == 1 ? "" : "s") of \(host)")
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget every learned client.")
        @OptionGroup var location: Location

        func run() throws {
            print("forgot \(location.store.forget(host: nil))")
        }
    }
}

/// The status page's line for learned passthroughs.
final class PassthroughStatus: AdminEndpoint, Sendable {
    private let store: PassthroughStore
    init(store: PassthroughStore) { self.store = store }
    var statusLine: String? { "passthrough: \(store.entries.count) client/host pairs tunnelled blindly (interception.learn_passthrough)" }
    func answer(_ request: AdminRequest) -> AdminAnswer? { nil }
}
