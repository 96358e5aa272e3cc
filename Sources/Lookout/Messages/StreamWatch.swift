import HTTPTypes
import LookoutHTTP
import LookoutMessages
import LookoutModel

/// Splits an exchange's streamed body into events as it passes — Server-Sent Events, NDJSON,
/// JSON text sequences, gRPC messages each way — into `stream.event` records, the summary's
/// `messages` object (time to the first event, the gaps) and, with a capture rule,
/// `<id>.messages.jsonl`. It reads the bytes after they went on; it never holds them back.
package final class StreamWatch {  // confined to the exchange's loop queue
    package let format: StreamFormat
    private let tally: MessageTally
    private let previewBytes: Int
    private let keep: Int
    private var budget: Int
    private var budgetSpent = false
    /// When the exchange began: every event's `ms` counts from it.
    private let start: Instant
    /// When the request was sent whole (`first_event_ms` counts from it).
    private var requestEnd: Instant?
    private var responseSplitter: Splitter?
    private var requestSplitter: Splitter?
    private var indices = (client: 0, upstream: 0)
    private var firstEventNoted = false
    private let capture: MessageCapture?
    private let file: MessageCaptureFile?

    private enum Splitter {
        case events(EventStreamSplitter)
        case grpc(GRPCMessageSplitter)

        func feed(_ bytes: UnsafeRawBufferPointer) -> [StreamEvent] {
            switch self {
            case .events(let splitter): splitter.feed(bytes)
            case .grpc(let splitter): splitter.feed(bytes)
            }
        }
    }

    package init(format: StreamFormat, settings: MessagesSettings, requestID: UInt64, start: Instant, capture: MessageCapture?) {
        self.format = format
        tally = MessageTally(protocolName: format.rawValue)
        previewBytes = settings.previewBytes
        budget = settings.decodeBudgetBytes
        let file = capture?.open(id: requestID)
        keep = max(settings.previewBytes, file != nil ? Int(min(Int64(settings.decodeBudgetBytes), capture?.rule.maxBodyBytes ?? 0)) : 0)
        self.start = start
        self.capture = capture
        self.file = file
    }

    /// gRPC: the client's messages are split too.
    package func watchRequest() {
        if requestSplitter == nil { requestSplitter = makeSplitter() }
    }

    /// The response is one of the formats: its body is split from here on.
    package func watchResponse() {
        if responseSplitter == nil { responseSplitter = makeSplitter() }
    }

    private func makeSplitter() -> Splitter {
        switch format {
        case .grpc, .grpcWeb: .grpc(GRPCMessageSplitter(keep: keep, web: format == .grpcWeb))
        default: .events(EventStreamSplitter(format: format, keep: keep))
        }
    }

    package func requestEnded(at instant: Instant?) {
        if requestEnd == nil { requestEnd = instant ?? .now() }
    }

    /// The client's bytes; each message read is posted as `exchange`'s `stream.event`.
    package func clientBytes(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        guard let splitter = requestSplitter, spend(bytes.count) else { return }
        for event in splitter.feed(bytes) { passed(event, fromClient: true, exchange: exchange) }
    }

    package func upstreamBytes(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
        guard let splitter = responseSplitter, spend(bytes.count) else { return }
        for event in splitter.feed(bytes) { passed(event, fromClient: false, exchange: exchange) }
    }

    /// Splitting costs work in proportion to the bytes: past the budget it stops, and says so.
    private func spend(_ count: Int) -> Bool {
        guard !budgetSpent else { return false }
        budget -= count
        if budget < 0 {
            budgetSpent = true
            tally.setDecoding("frame_headers")
            return false
        }
        return true
    }

    /// The response body ended: a last line without its end still counts; gRPC's status is read
    /// from the trailers (or, for a Trailers-Only answer, from the head).
    package func responseEnded(trailers: HTTPFields?, exchange: StageContext) {
        if case .events(let splitter) = responseSplitter, !budgetSpent {
            for event in splitter.finish() { passed(event, fromClient: false, exchange: exchange) }
        }
        if case .grpc(let splitter) = responseSplitter, format == .grpcWeb, !splitter.trailers.isEmpty {
            let fields = splitter.trailers
            tally.setGRPCStatus(fields.first { $0.0 == "grpc-status" }.flatMap { Int($0.1) },
                                message: fields.first { $0.0 == "grpc-message" }?.1)
        }
        if let trailers { grpcStatus(from: trailers) }
    }

    package func grpcStatus(from fields: HTTPFields) {
        guard let status = fields[HTTPField.Name("grpc-status")!].flatMap({ Int($0) }) else { return }
        tally.setGRPCStatus(status, message: fields[HTTPField.Name("grpc-message")!])
    }

    private func passed(_ event: StreamEvent, fromClient: Bool, exchange: StageContext) {
        let now = Instant.now()
        let milliseconds = now.milliseconds(since: start)
        if !fromClient, !firstEventNoted {
            firstEventNoted = true
            tally.firstEvent(after: max(0, now.milliseconds(since: requestEnd ?? start)))
        }
        let index: Int
        if fromClient {
            indices.client += 1
            index = indices.client
        } else {
            indices.upstream += 1
            index = indices.upstream
        }
        tally.message(fromClient: fromClient, bytes: event.bytes, at: milliseconds)
        let isText = format != .grpc && format != .grpcWeb
        let from = fromClient ? "client" : "upstream"
        exchange.emit(StreamDidPassEvent(
            from: from, format: format.rawValue, index: index, milliseconds: milliseconds, bytes: event.bytes,
            event: event.name, id: event.id, compressed: event.compressed,
            preview: MessagePreviews.preview(event.data, isText: isText, limit: previewBytes, truncated: event.truncated)))
        guard let file else { return }
        var extra: [(String, String)] = []
        if let name = event.name { extra.append(("event", JSONText.quoted(name))) }
        if event.compressed { extra.append(("compressed", "true")) }
        file.write(from: from, milliseconds: milliseconds, kind: isText ? "event" : "message", bytes: event.bytes,
                   payload: event.data, isText: isText, whole: !event.truncated, extra: extra)
    }

    package var summary: MessagesSummary { tally.current }

    package func finish() -> (MessagesSummary, String?) {
        guard let file, let capture else { return (summary, nil) }
        capture.finished(file)
        return (summary, file.path)
    }
}
