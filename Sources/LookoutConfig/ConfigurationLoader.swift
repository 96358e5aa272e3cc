import Foundation
import LookoutModel
import Yams

/// Reads Lookout's YAML configuration file into a validated `LookoutConfiguration`.
///
/// Every key is optional; what the file leaves out keeps its default. Every
/// problem in the file is reported (not only the first), each with the file,
/// the line and column of the offending node, and the key path.
public enum ConfigurationLoader {
    /// Loads the file at `path`. A file that cannot be read gives one error with line 0.
    /// `~` is expanded against this process's `$HOME`.
    public static func load(contentsOf path: String) throws(ConfigurationErrors) -> LookoutConfiguration {
        try load(contentsOf: path, environment: ProcessInfo.processInfo.environment)
    }

    /// Loads configuration text; `file` is only used to name the source in errors.
    /// `~` is expanded against this process's `$HOME`.
    public static func load(yaml: String, file: String) throws(ConfigurationErrors) -> LookoutConfiguration {
        try load(yaml: yaml, file: file, environment: ProcessInfo.processInfo.environment)
    }

    /// `load(contentsOf:)`, looking `$HOME` up in `environment` to expand `~`.
    public static func load(
        contentsOf path: String,
        environment: [String: String]
    ) throws(ConfigurationErrors) -> LookoutConfiguration {
        let yaml: String
        switch readFile(path) {
        case .text(let text): yaml = text
        case .failure(let message):
            throw ConfigurationErrors(errors: [
                ConfigurationError(file: path, line: 0, column: 0, keyPath: "", message: message),
            ])
        }
        return try load(yaml: yaml, file: path, environment: environment)
    }

    /// `load(yaml:file:)`, looking `$HOME` up in `environment` to expand `~`.
    public static func load(
        yaml: String,
        file: String,
        environment: [String: String]
    ) throws(ConfigurationErrors) -> LookoutConfiguration {
        // Yams gives libyaml the text as UTF-8 without letting it skip a byte-order
        // mark, which then counts as a column and breaks the indentation of line 1.
        var text = yaml
        if text.unicodeScalars.first == "\u{FEFF}" {
            text.unicodeScalars.removeFirst()
        }
        let composed: Composed
        switch compose(text, file: file) {
        case .success(let value): composed = value
        case .failure(let error): throw ConfigurationErrors(errors: [error])
        }
        let reader = ConfigReader(
            file: file, renamedKeys: composed.renamedKeys, home: homeDirectory(environment: environment),
            adminTokenOverride: environment[LookoutConfiguration.Admin.tokenEnvironmentVariable])
        var configuration = reader.read(composed.root)
        if !reader.errors.isEmpty {
            throw ConfigurationErrors(errors: reader.sortedErrors)
        }
        configuration.otel.applyEnvironment(environment)
        if let problem = OTelSettings.endpointProblem(configuration.otel.endpoint) {
            throw ConfigurationErrors(errors: [ConfigurationError(file: file, line: 0, column: 0, keyPath: "OTEL_EXPORTER_OTLP_ENDPOINT",
                                                                  message: problem)])
        }
        return configuration
    }

    /// The environment variable that names the configuration file.
    public static let environmentVariable = "LOOKOUT_CONFIG"

    /// Where the configuration file is when none is named on the command line:
    /// `$LOOKOUT_CONFIG` when set (whether or not that file exists, so a wrong
    /// name is reported rather than silently replaced), else the first of these
    /// that exists: `./config/lookout.yaml`, `<executable dir>/../../config/lookout.yaml`
    /// (a SwiftPM build folder inside the checkout), `/etc/lookout/lookout.yaml`.
    /// Nil when there is none.
    public static func defaultConfigurationPath() -> String? {
        var executables: [String] = []
        if let argv0 = CommandLine.arguments.first, argv0.contains("/") {
            executables.append(argv0)
        }
        if let resolved = Bundle.main.executablePath {
            executables.append(resolved)
        }
        return defaultConfigurationPath(
            environment: ProcessInfo.processInfo.environment,
            currentDirectory: FileManager.default.currentDirectoryPath,
            executablePaths: executables,
            fileExists: { path in
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
                    && !isDirectory.boolValue
            })
    }

    /// `defaultConfigurationPath()` with everything it looks at passed in (for tests).
    static func defaultConfigurationPath(
        environment: [String: String],
        currentDirectory: String,
        executablePaths: [String],
        fileExists: (String) -> Bool
    ) -> String? {
        if let named = environment[environmentVariable], !named.isEmpty {
            return named
        }
        func absolute(_ path: String) -> String {
            let full = path.hasPrefix("/") ? path : currentDirectory + "/" + path
            return URL(fileURLWithPath: full).standardized.path
        }
        var candidates = [absolute("config/lookout.yaml")]
        for executable in executablePaths {
            let directory = (absolute(executable) as NSString).deletingLastPathComponent
            candidates.append(absolute(directory + "/../../config/lookout.yaml"))
            // A resolved SwiftPM path (.build/<triple>/debug/lookout) is one level deeper:
            // take the folder that holds `.build`.
            let components = directory.split(separator: "/", omittingEmptySubsequences: false)
            if let build = components.lastIndex(of: ".build") {
                let checkout = components[..<build].joined(separator: "/")
                candidates.append(absolute((checkout.isEmpty ? "" : checkout) + "/config/lookout.yaml"))
            }
        }
        candidates.append("/etc/lookout/lookout.yaml")
        var seen = Set<String>()
        for candidate in candidates where seen.insert(candidate).inserted {
            if fileExists(candidate) {
                return candidate
            }
        }
        return nil
    }

    // MARK: - Home folder

    /// `$HOME` when set and not empty, else the user's home folder; nil if neither is known.
    static func homeDirectory(environment: [String: String]) -> String? {
        if let home = environment["HOME"], !home.isEmpty {
            return home
        }
        let home = NSHomeDirectory()
        return home.isEmpty ? nil : home
    }

    /// `"~"` and `"~/..."` expanded against `home`; other paths unchanged.
    /// Nil when the path needs `home` and it is nil.
    static func expandTilde(_ path: String, home: String?) -> String? {
        guard path == "~" || path.hasPrefix("~/") else {
            return path
        }
        guard var home else {
            return nil
        }
        while home.count > 1 && home.hasSuffix("/") {
            home.removeLast()
        }
        if path == "~" {
            return home
        }
        return (home == "/" ? "" : home) + path.dropFirst()
    }

    // MARK: - Reading the file

    enum FileContents {
        case text(String)
        case failure(String)
    }

    static func readFile(_ path: String) -> FileContents {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return .failure("cannot read the configuration file: it is a directory")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as CocoaError {
            switch error.code {
            case .fileReadNoSuchFile, .fileNoSuchFile:
                return .failure("cannot read the configuration file: no such file")
            case .fileReadNoPermission:
                return .failure("cannot read the configuration file: permission denied")
            default:
                return .failure("cannot read the configuration file: \(error.localizedDescription)")
            }
        } catch {
            return .failure("cannot read the configuration file: \(error.localizedDescription)")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            return .failure("the configuration file is not valid UTF-8 text")
        }
        return .text(text)
    }

    // MARK: - Composing the YAML tree

    struct Composed {
        var root: Node?
        /// Keys renamed to get past Yams' duplicate-key check: renamed name -> name in the file.
        var renamedKeys: [String: String]
    }

    /// `Yams.compose(yaml:)`, tolerating duplicate keys.
    ///
    /// Yams 6 throws on the first mapping with a duplicate key, which would hide
    /// every other problem in the file. When it does, the first occurrence of the
    /// key is renamed in a copy of the text: its first character is replaced by an
    /// unused private-use character, one Unicode scalar for one, so every line and
    /// column stays where it was. The reader maps renamed keys back and reports
    /// each duplicate at its second (and later) occurrence.
    static func compose(_ yaml: String, file: String) -> Result<Composed, ConfigurationError> {
        var text = yaml
        var renamed: [String: String] = [:]
        var nextPrivateUse: UInt32 = 0xE000
        while true {
            do {
                return .success(Composed(root: try Yams.compose(yaml: text), renamedKeys: renamed))
            } catch let YamlError.duplicatedKeysInMapping(duplicates, context) {
                let mark = context.mark
                func fatal() -> ConfigurationError {
                    ConfigurationError(
                        file: file, line: mark.line, column: mark.column, keyPath: "",
                        message: "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", "))"
                            + " (fix it to see any other errors)")
                }
                guard let name = duplicates.first, let first = name.unicodeScalars.first,
                      let replacement = unusedPrivateUseScalar(in: text, from: &nextPrivateUse),
                      let position = keyStart(in: text, line: mark.line, column: mark.column, first: first)
                else {
                    return .failure(fatal())
                }
                var scalars = text.unicodeScalars
                scalars.replaceSubrange(position...position, with: [replacement])
                text = String(scalars)
                var newName = String.UnicodeScalarView()
                newName.append(replacement)
                newName.append(contentsOf: name.unicodeScalars.dropFirst())
                renamed[String(newName)] = renamed[name] ?? name
            } catch let error as YamlError {
                return .failure(syntaxError(error, yaml: text, file: file))
            } catch {
                return .failure(ConfigurationError(
                    file: file, line: 0, column: 0, keyPath: "", message: "invalid YAML: \(error)"))
            }
        }
    }

    private static func unusedPrivateUseScalar(in text: String, from next: inout UInt32) -> Unicode.Scalar? {
        while next <= 0xF8FF {
            let candidate = Unicode.Scalar(next)!
            next += 1
            if !text.unicodeScalars.contains(candidate) {
                return candidate
            }
        }
        return nil
    }

    /// The index of the key's first character, given the key node's mark: the
    /// character at the mark for a plain key, the one after the quote for a quoted
    /// key, past any anchor or tag. Nil unless that character is `first` (then the
    /// key is left alone and the duplicate is reported on its own).
    private static func keyStart(
        in text: String, line: Int, column: Int, first: Unicode.Scalar
    ) -> String.UnicodeScalarView.Index? {
        let scalars = text.unicodeScalars
        guard var index = scalarIndex(in: text, line: line, column: column) else {
            return nil
        }
        // Step over node properties (`&anchor`, `!tag`) written before the key.
        while scalars[index] == "&" || scalars[index] == "!" {
            while index != scalars.endIndex && scalars[index] != " " && scalars[index] != "\t" {
                index = scalars.index(after: index)
            }
            while index != scalars.endIndex && (scalars[index] == " " || scalars[index] == "\t") {
                index = scalars.index(after: index)
            }
            if index == scalars.endIndex {
                return nil
            }
        }
        if scalars[index] == first {
            return index
        }
        if scalars[index] == "\"" || scalars[index] == "'" {
            let next = scalars.index(after: index)
            if next != scalars.endIndex && scalars[next] == first {
                return next
            }
        }
        return nil
    }

    /// The index of the Unicode scalar at a libyaml mark (1-based line and column,
    /// columns counted in scalars).
    static func scalarIndex(in text: String, line: Int, column: Int) -> String.UnicodeScalarView.Index? {
        let scalars = text.unicodeScalars
        var index = scalars.startIndex
        var currentLine = 1
        var currentColumn = 1
        while index != scalars.endIndex {
            if currentLine == line && currentColumn == column {
                return index
            }
            let scalar = scalars[index]
            var next = scalars.index(after: index)
            switch scalar {
            case "\r":
                if next != scalars.endIndex && scalars[next] == "\n" {
                    next = scalars.index(after: next)
                }
                currentLine += 1
                currentColumn = 1
            case "\n", "\u{85}", "\u{2028}", "\u{2029}":
                currentLine += 1
                currentColumn = 1
            default:
                currentColumn += 1
            }
            index = next
        }
        return nil
    }

    /// The 1-based line and column of a `String.Index`, counted as libyaml does.
    private static func lineAndColumn(of target: String.Index, in text: String) -> (Int, Int) {
        let scalars = text.unicodeScalars
        var index = scalars.startIndex
        var line = 1
        var column = 1
        while index != scalars.endIndex && index < target {
            let scalar = scalars[index]
            var next = scalars.index(after: index)
            switch scalar {
            case "\r":
                if next != scalars.endIndex && scalars[next] == "\n" {
                    next = scalars.index(after: next)
                }
                line += 1
                column = 1
            case "\n", "\u{85}", "\u{2028}", "\u{2029}":
                line += 1
                column = 1
            default:
                column += 1
            }
            index = next
        }
        return (line, column)
    }

    private static func syntaxError(_ error: YamlError, yaml: String, file: String) -> ConfigurationError {
        func make(_ mark: Mark, _ context: YamlError.Context?, _ problem: String) -> ConfigurationError {
            var message = "invalid YAML: \(problem)"
            if let context {
                message += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
            }
            return ConfigurationError(
                file: file, line: mark.line, column: mark.column, keyPath: "", message: message)
        }
        switch error {
        case let .scanner(context, problem, mark, _),
             let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            return make(mark, context, problem)
        case let .reader(problem, offset, _, _):
            var line = 0
            var column = 0
            if let offset, let index = yaml.index(yaml.startIndex, offsetBy: offset, limitedBy: yaml.endIndex) {
                (line, column) = lineAndColumn(of: index, in: yaml)
            }
            return ConfigurationError(
                file: file, line: line, column: column, keyPath: "", message: "invalid YAML: \(problem)")
        default:
            return ConfigurationError(
                file: file, line: 0, column: 0, keyPath: "", message: "invalid YAML: \(error)")
        }
    }
}
