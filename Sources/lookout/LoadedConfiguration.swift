import Logging
import LookoutConfig
#if canImport(Glibc)
import Glibc
#endif

/// Finds and loads the config file; a bad config never starts a half-working proxy.
enum LoadedConfiguration {
    static func load(path: String?, logger: Logger) -> LookoutConfiguration {
        guard let path = path ?? ConfigurationLoader.defaultConfigurationPath() else {
            logger.notice("no config file found; using built-in defaults")
            var configuration = LookoutConfiguration()
            let variable = LookoutConfiguration.Admin.tokenEnvironmentVariable
            if let token = getenv(variable).map({ String(cString: $0) }), !token.isEmpty {
                if let problem = LookoutConfiguration.Admin.tokenProblem(token) {
                    FileHandleOutput.standardError("\(variable): \(problem)\n")
                    exit(78)  // EX_CONFIG
                }
                configuration.admin.token = token
            }
            return configuration
        }
        do {
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
