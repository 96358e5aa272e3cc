import ArgumentParser
import Dispatch
import Logging
import LookoutConfig
import LookoutModel
import LookoutRecordings

/// `lookout simulate RECORDING...`: a proxy that answers from recordings, with no config file to
/// write first (the defaults, or `--config`, with `simulate` set from the arguments).
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate", abstract: "Run a proxy that answers from recordings (Lookout logs or HAR files).")

    @Argument(help: "The recordings.") var recordings: [String]
    @Option(name: .long, help: "Listen on HOST:PORT (repeatable; default: the config's).") var listen: [String] = []
    @Option(name: .long, help: "simulate (a miss is 502 simulation_miss) or spy (a miss goes upstream).")
    var mode: String = "simulate"
    @Option(name: .long, help: "A config file for everything else (default: none, the defaults).") var config: String?
    @Option(name: .long, help: "Write the JSON-lines log to PATH, or '-' for stdout.") var log: String?

    func run() throws {
        guard let parsed = SimulateSettings.Mode(rawValue: mode), parsed != .off else {
            throw ValidationError("--mode must be simulate or spy, got \(mode)")
        }
        ProxyRunner.blockControlSignals()
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "lookout")
        var file = config.map { LoadedConfiguration.load(path: $0, logger: logger) } ?? LookoutConfiguration()
        for recording in recordings {
            do {
                _ = try RecordingReader.read(recording)
            } catch {
                throw ValidationError("\(error)")
            }
        }
        file.simulate.recordings = recordings
        file.simulate.mode = parsed
        if !listen.isEmpty { file.listen = try listen.map { try ListenAddress.parse($0) } }
        if let log { file.log.path = log }
        let runner = try ProxyRunner(configuration: file, logger: logger)
        try runner.start()
        dispatchMain()
    }
}
