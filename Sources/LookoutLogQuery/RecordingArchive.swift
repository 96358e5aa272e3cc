import LookoutHTTP

/// What goes in a downloadable recording: the summary records as a log whose capture paths are
/// made relative (`capture/NAME`), and the capture files to put beside it under those names — so
/// the unpacked folder is a recording `lookout simulate`, `replay` and `diff` read where it lands.
public struct RecordingArchive {
    /// The folder the archive unpacks into.
    public static let folder = "lookout-recording"
    /// The log inside that folder.
    public static let logName = "recording.jsonl"

    /// The log, one record per line.
    public private(set) var log: [UInt8] = []
    /// The capture files named by the log: where they are now and their name inside the folder.
    public private(set) var files: [(path: String, name: String)] = []
    private var names: [String: String] = [:]
    private var taken: Set<String> = []

    public init() {}

    /// Adds one summary record (its JSON, no newline).
    public mutating func add(_ line: [UInt8]) {
        let replacements: [(range: Range<Int>, text: [UInt8])] = line.withUnsafeBufferPointer { buffer in
            guard let record = LogRecord(buffer) else { return [] }
            return ["request", "response"].compactMap { which in
                guard let span = record.span(["capture", which]), let path = record.string("capture", which) else { return nil }
                return (span.start..<span.end, Array(JSONText.quoted(name(for: path)).utf8))
            }
        }
        var rewritten = line
        // From the end, so the earlier ranges still hold.
        for replacement in replacements.sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
            rewritten.replaceSubrange(replacement.range, with: replacement.text)
        }
        log += rewritten
        log.append(UInt8(ascii: "\n"))
    }

    /// The name a capture file gets in the folder: `capture/` and its own name, made unique when
    /// two folders held files of the same name.
    private mutating func name(for path: String) -> String {
        if let known = names[path] { return known }
        let base = path.split(separator: "/").last.map(String.init) ?? "body"
        var candidate = "capture/" + base
        var counter = 2
        while taken.contains(candidate) {
            candidate = "capture/\(counter)-" + base
            counter += 1
        }
        taken.insert(candidate)
        names[path] = candidate
        files.append((path, candidate))
        return candidate
    }
}
