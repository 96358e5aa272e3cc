import ArgumentParser
import Dispatch
import Logging
import Lookout
import LookoutConfig
import LookoutMonitors
import LookoutModel
#if canImport(Glibc)
import Glibc
#endif

/// `lookout run`: starts the proxy and runs until SIGTERM/SIGINT.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the proxy.")

    @Option(name: .long, help: "Config file (default: config/lookout.yaml).")
    var config: String?

    @Option(name: .long, help: "Listen on HOST:PORT instead of the config's list (repeatable; port 0 picks one).")
    var listen: [String] = []

    @Option(name: .long, help: "Write the JSON-lines log to PATH, or '-' for stdout.")
    var log: String?

    @Flag(name: .long, help: "Log every lifecycle event, not only one summary per exchange.")
    var verboseEvents = false

    func run() throws {
        ProxyRunner.blockControlSignals()
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "lookout")
        var file = LoadedConfiguration.load(path: config, logger: logger)
        if !listen.isEmpty {
            file.listen = try listen.map { try ListenAddress.parse($0) }
        }
        if let problem = file.openProxyProblem { throw ValidationError(problem) }
        if let problem = file.adminTokenProblem { throw ValidationError(problem) }
        if let log { file.log.path = log }
        if verboseEvents { file.log.verbose = true }
        let runner = try ProxyRunner(configuration: file, path: config ?? ConfigurationLoader.defaultConfigurationPath(),
                                     logger: logger)
        try runner.start()
        dispatchMain()
    }
}

extension ListenAddress {
    /// Parses a `--listen` value exactly as the config file's `listen:` entries are parsed.
    static func parse(_ text: String) throws -> ListenAddress {
        do {
            return try ListenAddress(parsing: text)
        } catch {
            throw ValidationError("--listen \(text): \(error.message)")
        }
    }
}
