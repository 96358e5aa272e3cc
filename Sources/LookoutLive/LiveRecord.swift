/// One log record kept for the live stream: its place in the stream and its JSON (no newline).
struct LiveRecord: Sendable {
    enum Kind: Sendable {
        /// `"event":"exchange"`: the summary of a finished exchange.
        case exchange
        /// The other records the default log writes too (`session.*`, `connection.wasRejected`).
        case notice
        /// A lifecycle event, kept only while lifecycle events are asked for (`&verbose=1`, `log.verbose`).
        case lifecycle
    }

    /// The stream's sequence number: the SSE `id:`, and what `Last-Event-ID` and `before=` name.
    let sequence: UInt64
    let kind: Kind
    /// The exchange the record belongs to (its `id`), if any.
    let exchangeID: UInt64?
    let line: [UInt8]

    /// The record with `"seq":N` as its first member, for JSON answers.
    var lineWithSequence: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(line.count + 24)
        out += Array("{\"seq\":\(sequence)".utf8)
        if line.count > 2 { out.append(UInt8(ascii: ",")) }
        out += line.dropFirst()
        return out
    }
}
