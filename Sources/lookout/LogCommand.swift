import ArgumentParser
import Foundation
import Lookout
import LookoutConfig
import LookoutLogQuery
import LookoutModel

/// `lookout log [FILE|-] …` and `lookout log summary …`: read the JSON-lines log after the fact.
struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "Filter, print and summarise the traffic log.",
        subcommands: [Show.self, Summary.self], defaultSubcommand: Show.self)

    struct Selection: ParsableArguments {
        @Argument(help: "The log file, or - for standard input (default: the config's log.path).")
        var file: String?

        @Option(name: .long, help: "Only exchanges matching this expression (see the README's filter language).")
        var filter: String?

        @Option(name: .long, help: "Only exchanges at or after this time: RFC 3339, or a duration back from now (15m, 2h, 1d).")
        var since: String?

        @Option(name: .long, help: "Only exchanges before this time (same forms as --since).")
        var until: String?

        @Option(name: .long, help: "The config file whose log.path is read when no FILE is given.")
        var config: String?

        /// The summary records (`"event":"exchange"`) that pass the selection, in file order.
        func forEachRecord(follow: Bool, _ body: (LogRecord) -> Bool) throws {
            let filter = try parsedFilter()
            let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
            let since = try time(self.since, "--since", now: now)
            let until = try time(self.until, "--until", now: now)
            let path = try logPath()
            do {
                try LogLineReader(path: path == "-" ? nil : path, follow: follow).forEachLine { line in
                    // Cheap test first: only summary records, by their event field.
                    guard let record = LogRecord(line), record.string("event") == "exchange" else { return true }
                    if since != nil || until != nil {
                        guard let ts = record.string("ts").flatMap(LogTime.timestamp) else { return true }
                        if let since, ts < since { return true }
                        if let until, ts >= until { return true }
                    }
                    if let filter, !filter.matches(record) { return true }
                    return body(record)
                }
            } catch {
                FileHandleOutput.standardError("lookout log: \(error)\n")
                throw ExitCode(1)
            }
        }

        private func parsedFilter() throws -> LogFilter? {
            guard let text = filter else { return nil }
            let result: Result<LogFilter, LogFilterError>
            do throws(LogFilterError) {
                result = .success(try LogFilter.parse(text))
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success(let parsed):
                return parsed
            case .failure(let error):
                // The expression, then a caret under the column.
                FileHandleOutput.standardError("lookout log: --filter: \(error)\n  \(text)\n  "
                                               + String(repeating: " ", count: max(0, error.column - 1)) + "^\n")
                throw ExitCode(64)
            }
        }

        private func time(_ text: String?, _ option: String, now: Int64) throws -> Int64? {
            guard let text else { return nil }
            guard let value = LogTime.parse(text, now: now) else {
                FileHandleOutput.standardError("lookout log: \(option) \(text): expected RFC 3339 (2026-11-24T09:30:00Z) or a duration (15m, 2h, 1d)\n")
                throw ExitCode(64)
            }
            return value
        }

        private func logPath() throws -> String {
            if let file { return file }
            let path = config ?? ConfigurationLoader.defaultConfigurationPath()
            let configured = (try? path.map { try ConfigurationLoader.load(contentsOf: $0) }) ?? nil
            if let log = configured?.log, log.enabled, log.path != "-" { return log.path }
            FileHandleOutput.standardError("lookout log: name the log file (the config logs to standard output)\n")
            throw ExitCode(64)
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Print the exchanges that match.")
        @OptionGroup var selection: Selection

        @Flag(name: .long, help: "Keep reading as the log grows (and across rotation).")
        var follow = false

        @Option(name: .long, help: "table, jsonl, json, csv, curl or har.")
        var format: String = "table"

        func run() throws {
            guard let format = LogFormat(rawValue: format) else {
                FileHandleOutput.standardError("lookout log: --format \(format): expected \(LogFormat.allCases.map(\.rawValue).joined(separator: ", "))\n")
                throw ExitCode(64)
            }
            try LogCommand.write(selection, format: format, follow: follow, to: BufferedOutput())
        }
    }

    static func write(_ selection: Selection, format: LogFormat, follow: Bool, to out: BufferedOutput) throws {
        out.write(format.header(version: Session.version))
        var index = 0
        try selection.forEachRecord(follow: follow) { record in
            out.write(format.render(record, index: index))
            index += 1
            if follow { out.flush() }
            return true
        }
        out.write(format.footer)
        out.flush()
    }

    struct Summary: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count, error share, bytes and p50/p95/p99 of each phase, per group.")
        @OptionGroup var selection: Selection

        @Option(name: .long, help: "host, status, code, kind or method.")
        var by: String = "host"

        func run() throws {
            guard let grouping = LogSummary.Grouping(rawValue: by) else {
                FileHandleOutput.standardError("lookout log summary: --by \(by): expected \(LogSummary.Grouping.allCases.map(\.rawValue).joined(separator: ", "))\n")
                throw ExitCode(64)
            }
            var summary = LogSummary(by: grouping)
            try selection.forEachRecord(follow: false) { record in
                summary.add(record)
                return true
            }
            let out = BufferedOutput()
            out.write(summary.render())
            out.flush()
        }
    }
}

/// `lookout har`: the log (and captured bodies) as HAR 1.2 — `lookout log --format har` with
/// the log named by `--log` and the HAR written to `--output`.
struct HARCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "har", abstract: "Export exchanges as HAR 1.2.")

    @OptionGroup var selection: LogCommand.Selection

    @Option(name: .long, help: "The log file (the same as FILE).")
    var log: String?

    @Option(name: .long, help: "Write here instead of standard output.")
    var output: String?

    func run() throws {
        var selection = selection
        if let log { selection.file = log }
        var fd: Int32 = 1
        if let output {
            fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                FileHandleOutput.standardError("lookout har: cannot write \(output): \(String(cString: strerror(errno)))\n")
                throw ExitCode(1)
            }
        }
        defer { if fd != 1 { close(fd) } }
        try LogCommand.write(selection, format: .har, follow: false, to: BufferedOutput(fd: fd))
    }
}

/// Standard output (or another descriptor) in 256 KiB writes.
final class BufferedOutput {
    private var buffer: [UInt8] = []
    private let fd: Int32

    init(fd: Int32 = 1) {
        self.fd = fd
        buffer.reserveCapacity(1 << 18)
    }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 18 { flush() }
    }

    func flush() {
        var offset = 0
        while offset < buffer.count {
            let n = buffer[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
