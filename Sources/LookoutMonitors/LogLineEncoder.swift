import LookoutModel

/// Encodes events as the JSON-lines log writes them, one record at a time and without the
/// newline, for monitors other than the log (the live event stream): the same fields, the same
/// redaction.
public struct LogLineEncoder: ~Copyable {
    private var buffer = JSONBuffer(capacity: 1024)
    private let options: LogRecordOptions
    private let sharesSummaryRecords: Bool

    /// `sharesSummaryRecords`: take a summary record another monitor with the same options
    /// already encoded, and offer the ones encoded here (see `FinishedExchange.share`).
    public init(revealSecrets: Bool = false, includeHeaders: Bool = false, sharesSummaryRecords: Bool = false) {
        options = LogRecordOptions(revealSecrets: revealSecrets, includeHeaders: includeHeaders)
        buffer.recordOptions = options
        self.sharesSummaryRecords = sharesSummaryRecords
    }

    /// The summary record (`"event":"exchange"`) of a `request.didFinish` event; nil for any other.
    public mutating func summaryRecord(of event: LookoutEvent) -> [UInt8]? {
        let format = options.sharedRecordFormat
        let finished = sharesSummaryRecords ? event.finishedExchange : nil
        if let shared = finished?.sharedRecord(format: format) { return shared }
        buffer.removeAll()
        let options = self.options
        let written: Void? = event.withSummary { (summary: borrowing ExchangeSummary) -> Void in
            buffer.appendSummaryRecord(summary, options: options)
        }
        guard written != nil else { return nil }
        let record = line
        finished?.share(record: record, format: format)
        return record
    }

    /// A running exchange as a summary record would describe it now, with `"state":"in_flight"`
    /// and its phase.
    public mutating func inFlightRecord(_ exchange: InFlightExchange) -> [UInt8] {
        buffer.removeAll()
        buffer.appendSummaryRecord(exchange.summary, options: options, inFlightPhase: exchange.phase)
        return line
    }

    /// The event's own record, as the verbose log writes it.
    public mutating func eventRecord(_ event: LookoutEvent) -> [UInt8] {
        buffer.removeAll()
        buffer.appendEventRecord(event, options: options)
        return line
    }

    /// The record just written, without its newline.
    private var line: [UInt8] { buffer.line(from: 0) }
}
