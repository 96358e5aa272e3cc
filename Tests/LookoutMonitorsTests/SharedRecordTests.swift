import Foundation
@testable import LookoutModel
import Testing
@testable import LookoutMonitors

/// The JSON-lines log and the live view's encoder write the same summary record; with sharing on,
/// whichever runs first encodes it and the other takes those bytes (`FinishedExchange.share`).
@Suite struct SharedRecordTests {
    private func finishedEvent() -> LookoutEvent {
        let summary = httpSummary()
        return LookoutEvent(EventContext(time: summary.end, connectionID: 3, requestID: 7), RequestDidFinish(summary: summary))
    }

    /// What a log that shares nothing writes for `event`.
    private func unsharedLine(_ event: LookoutEvent, revealSecrets: Bool = false) throws -> String {
        let (monitor, path) = try makeMonitor(revealSecrets: revealSecrets)
        return try #require(try deliver([event], to: monitor, path: path).first)
    }

    private func sharingMonitor(revealSecrets: Bool = false) throws -> (JSONLinesLogMonitor, String) {
        let path = temporaryLogPath()
        let monitor = try JSONLinesLogMonitor(destination: .file(path: path), verbose: false, revealSecrets: revealSecrets,
                                              includeHeaders: false, sharesSummaryRecords: true)
        return (monitor, path)
    }

    @Test func theLogOffersItsRecordAndTheEncoderTakesIt() throws {
        let event = finishedEvent()
        let (monitor, path) = try sharingMonitor()
        let lines = try deliver([event], to: monitor, path: path)
        #expect(lines == [try unsharedLine(finishedEvent())])
        let kept = try #require(event.finishedExchange?.sharedRecord(format: 0))
        #expect(String(decoding: kept, as: UTF8.self) == lines.first)

        // The encoder hands back the kept bytes themselves: a marker put in their place shows it.
        let marked = finishedEvent()
        marked.finishedExchange?.share(record: Array(#"{"marker":1}"#.utf8), format: 0)
        var encoder = LogLineEncoder(sharesSummaryRecords: true)
        let taken = encoder.summaryRecord(of: marked).map { String(decoding: $0, as: UTF8.self) }
        #expect(taken == #"{"marker":1}"#)
    }

    @Test func theEncoderOffersItsRecordAndTheLogWritesIt() throws {
        let event = finishedEvent()
        var encoder = LogLineEncoder(sharesSummaryRecords: true)
        let encoded = encoder.summaryRecord(of: event).map { String(decoding: $0, as: UTF8.self) }
        #expect(encoded == (try unsharedLine(finishedEvent())))

        let marked = finishedEvent()
        marked.finishedExchange?.share(record: Array(#"{"marker":2}"#.utf8), format: 0)
        let (monitor, path) = try sharingMonitor()
        #expect(try deliver([marked], to: monitor, path: path) == [#"{"marker":2}"#])
        #expect(monitor.recordsWritten == 1)
    }

    @Test func aRecordWithOtherOptionsIsNotTaken() throws {
        // Kept with secrets redacted (format 0): a monitor revealing them encodes its own.
        let event = finishedEvent()
        event.finishedExchange?.share(record: Array(#"{"marker":3}"#.utf8), format: 0)
        let (monitor, path) = try sharingMonitor(revealSecrets: true)
        #expect(try deliver([event], to: monitor, path: path) == [try unsharedLine(finishedEvent(), revealSecrets: true)])
        var encoder = LogLineEncoder(revealSecrets: true, sharesSummaryRecords: true)
        let encoded = encoder.summaryRecord(of: event).map { String(decoding: $0, as: UTF8.self) }
        #expect(encoded == (try unsharedLine(finishedEvent(), revealSecrets: true)))
    }

    @Test func monitorsThatDoNotShareIgnoreAKeptRecord() throws {
        let event = finishedEvent()
        event.finishedExchange?.share(record: Array(#"{"marker":4}"#.utf8), format: 0)
        #expect(try unsharedLine(event) == (try unsharedLine(finishedEvent())))
        var encoder = LogLineEncoder()
        let encoded = encoder.summaryRecord(of: event).map { String(decoding: $0, as: UTF8.self) }
        #expect(encoded == (try unsharedLine(finishedEvent())))
    }

    @Test func theFirstRecordKeptStays() throws {
        let event = finishedEvent()
        event.finishedExchange?.share(record: [1], format: 0)
        event.finishedExchange?.share(record: [2], format: 0)
        #expect(event.finishedExchange?.sharedRecord(format: 0) == [1])
        #expect(event.finishedExchange?.sharedRecord(format: 1) == nil)
        #expect(LookoutEvent(EventContext(connectionID: 1), ConnectionDidOpen(client: "127.0.0.1:1", listener: "127.0.0.1:8080")).finishedExchange == nil)
    }
}
