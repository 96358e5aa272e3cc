import Logging
import LookoutConfig

/// The state folder a subcommand works on: `--state-dir` when given, else `state_dir` from the
/// config file (`--config`, or the one `lookout run` would use).
enum StateDirectory {
    static func resolve(stateDirectory: String?, configPath: String?) -> String {
        if let stateDirectory { return stateDirectory }
        var logger = Logger(label: "lookout")
        logger.logLevel = .warning
        return LoadedConfiguration.load(path: configPath, logger: logger).stateDirectory
    }
}
