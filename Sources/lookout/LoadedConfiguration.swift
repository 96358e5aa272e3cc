import Logging
import LookoutConfig
#if canImport(Glibc)
import Glibc
#endif

/// Finds and loads the config file; a bad config never starts a half-working proxy.
enum LoadedConfiguration {
    static func load(path: String?, logger: Logger) -> LookoutConfiguration {
        do {
            guard let path = path ?? ConfigurationLoader.defaultConfigurationPath() else {
                logger.notice("no config file found; using built-in defaults")
                // Read as an empty file, so the environment (LOOKOUT_ADMIN_TOKEN) still counts.
                return try ConfigurationLoader.load(yaml: "", file: "built-in defaults")
            }
            let configuration = try ConfigurationLoader.load(contentsOf: path)
            logger.info("config loaded from \(path)")
            return configuration
        } catch {
            FileHandleOutput.standardError("\(error.description)\n")
            exit(78)  // EX_CONFIG
        }
    }
}

enum FileHandleOutput {
    static func standardError(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}
