/// One problem in a configuration file, with where it is.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file as it was named to the loader.
    public var file: String
    /// 1-based; 0 when unknown (e.g. the file could not be read).
    public var line: Int
    /// 1-based, counted in Unicode scalars; 0 when unknown.
    public var column: Int
    /// Where in the configuration: `"timeouts.client_header"`, `"listen[1]"`;
    /// empty for the document itself (syntax errors, a top level that is not a mapping).
    public var keyPath: String
    public var message: String

    public init(file: String, line: Int, column: Int, keyPath: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    /// `"FILE:LINE:COL: KEYPATH: message"`. The `LINE:COL:` part is left out
    /// when the line is unknown (0), and the `KEYPATH: ` part when it is empty.
    public var description: String {
        var text = file + ":"
        if line > 0 {
            text += "\(line):\(column):"
        }
        if !keyPath.isEmpty {
            text += " \(keyPath):"
        }
        return text + " " + message
    }
}

/// Every problem found in one configuration file, in the order they appear in it.
public struct ConfigurationErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [ConfigurationError]

    public init(errors: [ConfigurationError]) {
        self.errors = errors
    }

    /// One error per line, no trailing newline.
    public var description: String {
        errors.map(\.description).joined(separator: "\n")
    }
}
