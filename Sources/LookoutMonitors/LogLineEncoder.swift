import Lookout

/// Encodes events as the JSON-lines log writes them, one record at a time and without the
/// newline, for monitors other than the log (the live event stream): the same fields, the same
/// redaction.
public struct LogLineEncoder: ~Copyable {
    private var buffer = JSONBuffer(capacity: 1024)
    private let options: LogRecordOptions

    public init(revealSecrets: Bool = false, includeHeaders: Bool = false) {
        options = LogRecordOptions(revealSecrets: revealSecrets, includeHeaders: includeHeaders)
        buffer.recordOptions = options
    }

    /// The summary record (`"event":"exchange"`) of a `request.didFinish` event; nil for any other.
    public mutating func summaryRecord(of event: LookoutEvent) -> [UInt8]? {
        buffer.removeAll()
        let options = self.options
        let written: Void? = event.withSummary { (summary: borrowing ExchangeSummary) -> Void in
            buffer.appendSummaryRecord(summary, options: options)
        }
        return written == nil ? nil : line
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
    private var line: [UInt8] {
        let bytes = buffer.bytes
        return Array(bytes.last == UInt8(ascii: "\n") ? UnsafeRawBufferPointer(rebasing: bytes.dropLast()) : bytes)
    }
}
