import ArgumentParser
import LookoutConfig

/// `lookout config …`
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "config", abstract: "Work with config files.",
                                                    subcommands: [Check.self])

    /// `lookout config check PATH`: validates a config file, naming file, line and key of every error.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Validate a config file.")

        @Argument(help: "The config file.")
        var path: String

        func run() throws {
            do {
                let configuration = try ConfigurationLoader.load(contentsOf: path)
                for warning in configuration.warnings { FileHandleOutput.standardError("\(path): warning: \(warning)\n") }
                print("\(path): ok")
            } catch {
                FileHandleOutput.standardError("\(error.description)\n")
                throw ExitCode(1)
            }
        }
    }
}
