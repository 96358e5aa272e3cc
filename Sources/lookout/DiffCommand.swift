import ArgumentParser
import Foundation
import LookoutRecordings

/// `lookout diff A B`: two recordings (Lookout logs or HAR files) compared, for people and for CI.
/// Exit 0 when equal under the ignores, 1 when not, 2 on bad input.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "Compare two recordings (Lookout logs or HAR files): exit 0 equal, 1 different, 2 bad input.")

    @Argument(help: "The first recording.") var a: String
    @Argument(help: "The second recording.") var b: String
    @Option(name: .long, help: "Leave out a header (header:NAME) or a JSON body path (json:$.path, [*] for any index); repeatable.")
    var ignore: [String] = []
    @Option(name: .long, help: "table or json.") var format: String = "table"
    @Option(name: .long, help: "Pair exchanges by method and URL, in order (url), or by position (order).")
    var by: String = "url"
    @Option(name: .long, help: "Report total times that differ by more than this many milliseconds (default: not compared).")
    var timingThreshold: Double?

    func run() throws {
        var options = RecordingDiff.Options()
        guard let pairing = RecordingDiff.Pairing(rawValue: by) else { fail("--by must be url or order, got \(by)") }
        options.pairing = pairing
        guard format == "table" || format == "json" else { fail("--format must be table or json, got \(format)") }
        for item in ignore {
            if item.hasPrefix("header:"), item.count > 7 {
                options.ignoredHeaders.insert(String(item.dropFirst(7)).lowercased())
            } else if item.hasPrefix("json:$"), item.count > 6 {
                options.ignoredJSON.append(String(item.dropFirst(5)))
            } else {
                fail("--ignore wants header:NAME or json:$.path, got \(item)")
            }
        }
        if let threshold = timingThreshold, threshold < 0 { fail("--timing-threshold must not be negative") }
        options.timingThreshold = timingThreshold
        let first: [RecordedExchange], second: [RecordedExchange]
        do {
            first = try RecordingReader.read(a)
            second = try RecordingReader.read(b)
        } catch {
            fail(error.description)
        }
        let diff = RecordingDiff(first, second, options: options)
        print(format == "json" ? DiffReport.json(diff) : DiffReport.table(diff), terminator: "")
        if !diff.isEqual { throw ExitCode(1) }
    }

    private func fail(_ message: String) -> Never {
        FileHandleOutput.standardError("lookout diff: \(message)\n")
        Foundation.exit(2)
    }
}
