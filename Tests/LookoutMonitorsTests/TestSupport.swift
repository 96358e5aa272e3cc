import Foundation
import HTTPTypes
import Testing
@testable import LookoutModel
@testable import LookoutMonitors

/// An `Instant` whose `unixMicroseconds` is exactly `micros` (which must lie in the future of the
/// clock anchor). Finds the nanosecond at which the microsecond count steps, then offsets from it.
func instant(unixMicros micros: Int64) -> Instant {
    let probe = Instant.now().nanoseconds + 1_000_000
    _ = Instant(nanoseconds: probe).unixMicroseconds  // anchor read before `probe` was taken
    var step = probe
    var previous = Instant(nanoseconds: probe).unixMicroseconds
    for ns in (probe + 1)...(probe + 1001) {
        let current = Instant(nanoseconds: ns).unixMicroseconds
        if current != previous {
            step = ns
            previous = current
            break
        }
    }
    precondition(micros > previous, "target time must be after the clock anchor")
    return Instant(nanoseconds: step + UInt64(micros - previous) * 1000)
}

extension Instant {
    func adding(nanoseconds delta: UInt64) -> Instant { Instant(nanoseconds: nanoseconds + delta) }
    func subtracting(nanoseconds delta: UInt64) -> Instant { Instant(nanoseconds: nanoseconds - delta) }
}

/// This test process's scratch directory, removed when the process exits.
let testDirectory: String = {
    let path = NSTemporaryDirectory() + "lookout-monitors-tests-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: testDirectory) }
    return path
}()

/// A fresh path in `testDirectory` (the file does not exist yet).
func temporaryLogPath() -> String {
    testDirectory + "/\(UUID().uuidString).jsonl"
}

func readLines(_ path: String) throws -> [String] {
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(text.isEmpty || text.hasSuffix("\n"))
    return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
}

func parseJSON(_ line: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
    guard let dictionary = object as? [String: Any] else {
        throw CocoaError(.coderReadCorrupt)
    }
    return dictionary
}

/// A monitor writing to a new temporary file.
func makeMonitor(verbose: Bool = false, revealSecrets: Bool = false, includeHeaders: Bool = false,
                 path: String = temporaryLogPath()) throws -> (JSONLinesLogMonitor, String) {
    let monitor = try JSONLinesLogMonitor(destination: .file(path: path), verbose: verbose,
                                          revealSecrets: revealSecrets, includeHeaders: includeHeaders)
    return (monitor, path)
}

/// Delivers `events` the way `CompositeEventMonitor` does (serially on the monitor's queue) and
/// returns the lines written.
func deliver(_ events: [LookoutEvent], to monitor: JSONLinesLogMonitor, path: String) throws -> [String] {
    monitor.queue.sync {
        for event in events { monitor.receive(event) }
    }
    monitor.flush()
    return try readLines(path)
}

func fields(_ pairs: [(String, String)]) -> HTTPFields {
    var fields = HTTPFields()
    for (name, value) in pairs {
        fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
    }
    return fields
}

/// 2031-03-04T05:06:07.890123Z
let fixedEndMicros: Int64 = 1_930_367_167_890_123
let fixedTimestamp = "2031-03-04T05:06:07.890123Z"

/// The SPEC example exchange: GET through a fresh upstream connection, 1.4 ms in total.
func httpSummary() -> ExchangeSummary {
    let end = instant(unixMicros: fixedEndMicros)
    let start = end.subtracting(nanoseconds: 1_400_000)
    var summary = ExchangeSummary(requestID: 7, connectionID: 3, clientAddress: "127.0.0.1:51234", kind: .http,
                                  method: "GET", url: "http://127.0.0.1:9000/x", httpVersion: "HTTP/1.1",
                                  start: start)
    summary.end = end
    summary.status = 200
    var t = TransactionMetrics(fetchStart: start)
    t.domainLookupStart = start
    t.domainLookupEnd = start.adding(nanoseconds: 50_000)
    t.connectStart = start.adding(nanoseconds: 50_000)
    t.connectEnd = start.adding(nanoseconds: 170_000)
    t.requestStart = start.adding(nanoseconds: 170_000)
    t.requestEnd = start.adding(nanoseconds: 180_000)
    t.responseStart = start.adding(nanoseconds: 1_080_000)
    t.responseEnd = start.adding(nanoseconds: 1_280_000)
    t.remoteAddress = "127.0.0.1:9000"
    t.statusCode = 200
    t.requestHeaderBytes = 120
    t.responseHeaderBytes = 150
    t.responseBodyBytes = 1024
    summary.upstream = t
    summary.attempts = 1
    return summary
}
