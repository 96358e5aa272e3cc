import ArgumentParser
import Dispatch
import Foundation
import Logging
import Lookout
import LookoutConfig
import LookoutLogQuery
import LookoutModel
import LookoutMonitors
import LookoutRecordings

/// `lookout replay RECORDING`: each recorded request sent again through Lookout's own upstream
/// side — the config's trust rules, pins, parent proxies, client certificates, retries — with its
/// captured body, into a new log; with `--expect`, each answer compared with the recorded one.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Send a recording's requests again; --expect compares the answers (exit 1 when any differs).")

    @Argument(help: "The recording (a Lookout log or a HAR file).") var recording: String
    @Option(name: .long, help: "Only the exchanges this filter matches.") var filter: String?
    @Option(name: .long, help: "Requests in flight at once.") var concurrency = 4
    @Option(name: .long, help: "Requests started per second at most (0 = no limit).") var rate: Double = 0
    @Option(name: .long, help: "Write the new log here.") var log: String?
    @Option(name: .long, help: "same-status or same-body: compare each answer with the recorded one.") var expect: String?
    @Option(name: .long, help: "The config whose rules apply (trust, pins, parents, retries; default: the defaults).")
    var config: String?

    func run() throws {
        guard concurrency >= 1, rate >= 0 else { throw ValidationError("--concurrency must be at least 1 and --rate not negative") }
        guard expect == nil || expect == "same-status" || expect == "same-body" else {
            throw ValidationError("--expect must be same-status or same-body")
        }
        let selection = try filter.map { text in
            do { return try LogFilter.parse(text) } catch { throw ValidationError("--filter: \(error)") }
        }
        let exchanges: [RecordedExchange]
        do { exchanges = try RecordingReader.read(recording) } catch { throw ValidationError("\(error)") }
        let chosen = exchanges.filter { selection?.matches($0) ?? true }
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "lookout")
        var file = config.map { LoadedConfiguration.load(path: $0, logger: logger) } ?? LookoutConfiguration()
        file.simulate = SimulateSettings()
        var monitors: [any EventMonitor] = []
        if let log {
            monitors.append(try JSONLinesLogMonitor(destination: LogDestination(configPath: log), verbose: false,
                                                    revealSecrets: false, includeHeaders: true))
        }
        let session = try Session(configuration: SessionConfiguration(file, logger: logger), monitors: monitors)
        let results = ReplayResults(total: chosen.count, expect: expect)
        let inFlight = DispatchSemaphore(value: concurrency)
        let done = DispatchGroup()
        let start = DispatchTime.now()
        for (number, exchange) in chosen.enumerated() {
            inFlight.wait()
            if rate > 0 {
                let due = start.uptimeNanoseconds + UInt64(Double(number) / rate * 1e9)
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
            }
            done.enter()
            session.replay(Self.request(exchange)) { result in
                results.add(exchange, result)
                inFlight.signal()
                done.leave()
            }
        }
        done.wait()
        let closed = DispatchSemaphore(value: 0)
        session.shutdown { closed.signal() }
        closed.wait()
        session.monitor.flush()
        print(results.report(), terminator: "")
        if !results.allAsExpected { throw ExitCode(1) }
    }

    /// The recorded request: its fields (without the ones the log redacted) and its captured body.
    private static func request(_ exchange: RecordedExchange) -> ReplayRequest {
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
    private var differences: [String] = []
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
            differences.append("#\(exchange.index) \(label): not sent: \(refusal.message)")
        case .success(let response):
            line = response.status.map(String.init) ?? "—"
            if let error = response.error { line += " \(error.code)" }
            if let difference = compare(exchange, response) { differences.append("#\(exchange.index) \(label): \(difference)") }
        }
        if terminal {
            FileHandle.standardError.write(Data("\r[\(finished)/\(total)]".utf8))
        } else {
            print("\(finished)/\(total) \(line) \(label)")
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
        for difference in differences { text += "differs: \(difference)\n" }
        text += "\(total) replayed, \(differences.count) " + (expect == nil ? "not sent" : "not as recorded") + "\n"
        return text
    }
}
