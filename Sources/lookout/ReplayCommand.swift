import ArgumentParser
import Dispatch
import Foundation
import Logging
import Lookout
import LookoutStages
import LookoutConfig
import LookoutLogQuery
import LookoutModel
import LookoutMonitors
import LookoutRecordings

extension ReplaySchedule.Order: ExpressibleByArgument {}

/// `lookout replay RECORDING`: each recorded request sent again through Lookout's own upstream
/// side — the config's trust rules, pins, parent proxies, client certificates, retries — with its
/// captured body, into a new log; with `--expect`, each answer compared with the recorded one.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Send a recording's requests again; --expect compares the answers (exit 1 when any differs).",
        discussion: """
            By default (--order recorded) the recording's order is kept: a request starts only after \
            every request that had ended before it started in the recording has been answered, so one \
            connection's requests go one after another and requests that overlapped may overlap again. \
            --order none sends them in their recorded order of start without waiting. --concurrency caps \
            the requests in flight under either order. Recorded Cookie fields are sent as recorded; with \
            --session, cookies the replayed responses set replace them for the following requests to the \
            same host. Exit 2 for a recording that cannot be read or ordered.
            """)

    @Argument(help: "The recording (a Lookout log or a HAR file).") var recording: String
    @Option(name: .long, help: "Only the exchanges this filter matches.") var filter: String?
    @Option(name: .long, help: "Requests in flight at once, at most.") var concurrency = 4
    @Option(name: .long, help: "recorded (keep the recording's causal order) or none (recorded order of start, no waiting).")
    var order: ReplaySchedule.Order = .recorded
    @Flag(name: .long, help: "Cookies set by replayed responses replace recorded ones for the following requests to the same host.")
    var session = false
    @Option(name: .long, help: "Requests started per second at most (0 = no limit).") var rate: Double = 0
    @Option(name: .long, help: "Write the new log here.") var log: String?
    @Option(name: .long, help: "same-status or same-body: compare each answer with the recorded one.") var expect: String?
    @Option(name: .long, help: "The config whose rules apply (trust, pins, parents, retries; default: the defaults).")
    var config: String?

    func run() throws {
        guard concurrency >= 1 else { throw Self.unusable("--concurrency must be at least 1 (got \(concurrency))") }
        guard rate >= 0 else { throw ValidationError("--rate must not be negative") }
        guard expect == nil || expect == "same-status" || expect == "same-body" else {
            throw ValidationError("--expect must be same-status or same-body")
        }
        let selection = try filter.map { text in
            do { return try LogFilter.parse(text) } catch { throw ValidationError("--filter: \(error)") }
        }
        let chosen: [RecordedExchange]
        let schedule: ReplaySchedule
        do {
            chosen = try RecordingReader.read(recording).filter { selection?.matches($0) ?? true }
            schedule = try ReplaySchedule(chosen, order: order)
        } catch {
            throw Self.unusable(error.description)
        }
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "lookout")
        var file = config.map { LoadedConfiguration.load(path: $0, logger: logger) } ?? LookoutConfiguration()
        file.simulate = SimulateSettings()
        var monitors: [any EventMonitor] = []
        if let log {
            monitors.append(try JSONLinesLogMonitor(destination: LogDestination(configPath: log), verbose: false,
                                                    revealSecrets: false, includeHeaders: true))
        }
        let proxy = try Session(configuration: SessionConfiguration(file, logger: logger), monitors: monitors)
        let results = ReplayResults(total: chosen.count, expect: expect)
        ReplayDriver(exchanges: chosen, schedule: schedule, concurrency: concurrency, rate: rate, session: session)
            .run { request, answered in proxy.replay(request, completion: answered) } record: { results.add($0, $1) }
        let closed = DispatchSemaphore(value: 0)
        proxy.shutdown { closed.signal() }
        closed.wait()
        proxy.monitor.flush()
        print(results.report(), terminator: "")
        if !results.allAsExpected { throw ExitCode(1) }
    }

    /// Exit 2 with the message: the input cannot be replayed, and nothing was sent.
    private static func unusable(_ message: String) -> ExitCode {
        FileHandleOutput.standardError("lookout replay: \(message)\n")
        return ExitCode(2)
    }

    /// The recorded request: its fields (without the ones the log redacted) and its captured body.
    static func request(_ exchange: RecordedExchange) -> ReplayRequest {
        let headers = exchange.requestHeaders.filter { $0.value != "[redacted]" }
        let body: ReplayRequest.Body
        switch exchange.requestBody {
        case .file(let path, _): body = .file(path)
        case .bytes(let bytes): body = .bytes(bytes)
        case .none, .sizeOnly: body = .none
        }
        return ReplayRequest(method: exchange.method, url: exchange.url, headers: headers, body: body)
    }
}

/// The answers as they come (from any loop), a line or a progress count for each, and the report.
final class ReplayResults: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private let total: Int
    private let expect: String?
    private let terminal = isatty(1) == 1
    private var finished = 0
    /// Keyed by the exchange's place in the recording, so the report reads in that order whatever
    /// order the answers came in.
    private var differences: [Int: String] = [:]
    private var lines: [Int: String] = [:]
    private var printed = 0
    private var failures = 0

    init(total: Int, expect: String?) {
        self.total = total
        self.expect = expect
    }

    func add(_ exchange: RecordedExchange, _ result: Result<ReplayResponse, ReplayRefusal>) {
        lock.lock()
        defer { lock.unlock() }
        finished += 1
        let label = "\(exchange.method) \(exchange.url)"
        var line: String
        switch result {
        case .failure(let refusal):
            failures += 1
            line = "not sent: \(refusal.message)"
            differences[exchange.index] = "#\(exchange.index) \(label): not sent: \(refusal.message)"
        case .success(let response):
            line = response.status.map(String.init) ?? "—"
            if let error = response.error { line += " \(error.code)" }
            if let difference = compare(exchange, response) { differences[exchange.index] = "#\(exchange.index) \(label): \(difference)" }
        }
        if terminal {
            FileHandle.standardError.write(Data("\r[\(finished)/\(total)]".utf8))
            return
        }
        // Progress lines go out in the recording's order as each run of them is complete.
        lines[exchange.index] = "\(line) \(label)"
        while let next = lines.removeValue(forKey: printed) {
            printed += 1
            print("\(printed)/\(total) \(next)")
        }
    }

    private func compare(_ exchange: RecordedExchange, _ response: ReplayResponse) -> String? {
        guard let expect else { return nil }
        if exchange.status != response.status {
            let error = response.error.map { " (\($0.code): \($0.message))" } ?? ""
            return "status \(exchange.status.map(String.init) ?? "—") → \(response.status.map(String.init) ?? "—")\(error)"
        }
        guard expect == "same-body" else { return nil }
        let coding = response.headers.first { $0.name.lowercased() == "content-encoding" }?.value
        var received = response.body
        if case .decoded(let plain) = ContentDecoding.decode(received, contentEncoding: coding) { received = plain }
        switch BodyComparison.compare(exchange.responseBody, .bytes(received), ignoringJSON: []) {
        case nil: return nil
        case .json(let changes)?: return "body: " + changes.prefix(3).map { "\($0.path) \($0.a ?? "—") → \($0.b ?? "—")" }.joined(separator: "; ")
        case .bytes(let a, let b, let first)?: return "body: \(a) → \(b) bytes, first difference at byte \(first)"
        case .unknown(let why)?: return "body: \(why)"
        }
    }

    var allAsExpected: Bool {
        lock.lock()
        defer { lock.unlock() }
        return differences.isEmpty && failures == 0
    }

    func report() -> String {
        lock.lock()
        defer { lock.unlock() }
        var text = terminal ? "\n" : ""
        for (_, difference) in differences.sorted(by: { $0.key < $1.key }) { text += "differs: \(difference)\n" }
        text += "\(total) replayed, \(differences.count) " + (expect == nil ? "not sent" : "not as recorded") + "\n"
        return text
    }
}
