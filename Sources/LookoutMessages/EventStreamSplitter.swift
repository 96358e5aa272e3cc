#if canImport(Glibc)
import Glibc
#endif

/// Splits a response body into events as it passes: Server-Sent Events (the WHATWG HTML
/// standard's event-stream format: `data`, `event`, `id`, `retry` fields, `:` comments, an event
/// dispatched at a blank line), NDJSON/JSON Lines (a line each) or JSON text sequences (RFC 7464:
/// a record each, after its RS). Lines are found with `memchr`; an event holds at most `keep`
/// bytes of its data.
public final class EventStreamSplitter: @unchecked Sendable {  // confined to the exchange's loop queue
    private let format: StreamFormat
    private let keep: Int
    /// The line being read (at most `keep` bytes of it) and its full length.
    private var line: [UInt8] = []
    private var lineBytes = 0
    /// The previous chunk ended in CR: a LF opening this one belongs to that line end.
    private var afterCR = false
    // The SSE event being built.
    private var data: [UInt8] = []
    private var dataTruncated = false
    private var hasData = false
    private var name: String?
    private var lastID: String?
    private var eventBytes = 0
    /// Comment lines seen (SSE keep-alives).
    public private(set) var comments = 0

    public init(format: StreamFormat, keep: Int) {
        self.format = format
        self.keep = keep
    }

    /// Reads `bytes`; returns the events they completed.
    public func feed(_ bytes: UnsafeRawBufferPointer) -> [StreamEvent] {
        var events: [StreamEvent] = []
        var offset = 0
        guard let base = bytes.baseAddress else { return events }
        if afterCR, bytes.count > 0, bytes[0] == 0x0a {
            offset = 1
            eventBytes += 1
        }
        afterCR = false
        while offset < bytes.count {
            let rest = bytes.count - offset
            let lf = memchr(base + offset, 0x0a, rest).map { $0 - UnsafeMutableRawPointer(mutating: base) }
            let cr = format == .sse ? memchr(base + offset, 0x0d, lf.map { $0 - offset } ?? rest)
                .map { $0 - UnsafeMutableRawPointer(mutating: base) } : nil
            guard let end = cr ?? lf else {
                append(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                break
            }
            append(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
            var next = end + 1
            if cr != nil {
                if next < bytes.count, bytes[next] == 0x0a { next += 1 } else if next == bytes.count { afterCR = true }
            }
            eventBytes += next - end
            lineEnded(into: &events)
            offset = next
        }
        return events
    }

    /// The body ended: a last line without its end still counts (NDJSON, a json-seq record); an
    /// SSE event not closed by a blank line is dropped, as the standard says.
    public func finish() -> [StreamEvent] {
        var events: [StreamEvent] = []
        if lineBytes > 0, format != .sse { lineEnded(into: &events) }
        return events
    }

    private func append(_ bytes: UnsafeRawBufferPointer) {
        lineBytes += bytes.count
        eventBytes += bytes.count
        if line.count < keep { line += bytes.prefix(keep - line.count) }
    }

    private func lineEnded(into events: inout [StreamEvent]) {
        defer {
            line.removeAll(keepingCapacity: true)
            lineBytes = 0
        }
        switch format {
        case .sse:
            sseLine(into: &events)
        case .jsonSeq:
            // RFC 7464 §2.1: a record starts with RS; a line of only whitespace is no record.
            let record = line.first == 0x1e ? Array(line.dropFirst()) : line
            guard record.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0d }) else { eventBytes = 0; return }
            emit(record, truncated: lineBytes > line.count, into: &events)
        default:
            let trimmed = line.last == 0x0d ? Array(line.dropLast()) : line
            guard !trimmed.isEmpty else { eventBytes = 0; return }
            emit(trimmed, truncated: lineBytes > line.count, into: &events)
        }
    }

    private func emit(_ data: [UInt8], truncated: Bool, into events: inout [StreamEvent]) {
        events.append(StreamEvent(bytes: eventBytes, data: data, truncated: truncated))
        eventBytes = 0
    }

    private func sseLine(into events: inout [StreamEvent]) {
        guard lineBytes > 0 else {
            // A blank line dispatches the event (when it has data; otherwise its buffers reset).
            if hasData {
                events.append(StreamEvent(name: name ?? "message", id: lastID, bytes: eventBytes, data: data,
                                          truncated: dataTruncated))
            }
            data.removeAll(keepingCapacity: true)
            dataTruncated = false
            hasData = false
            name = nil
            eventBytes = 0
            return
        }
        if line.first == UInt8(ascii: ":") {
            comments += 1
            if !hasData && name == nil { eventBytes = 0 }
            return
        }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let field = String(decoding: line[..<(colon ?? line.count)], as: UTF8.self)
        var value = colon.map { Array(line[($0 + 1)...]) } ?? []
        if value.first == 0x20 { value.removeFirst() }
        switch field {
        case "data":
            if hasData { appendData([0x0a]) }
            hasData = true
            appendData(value)
            if lineBytes > line.count { dataTruncated = true }
        case "event":
            name = String(decoding: value, as: UTF8.self)
        case "id":
            if !value.contains(0) { lastID = String(decoding: value, as: UTF8.self) }
        default:
            break  // `retry` and unknown fields change no event
        }
    }

    private func appendData(_ bytes: [UInt8]) {
        let room = keep - data.count
        if bytes.count > room { dataTruncated = true }
        if room > 0 { data += bytes.prefix(room) }
    }
}
