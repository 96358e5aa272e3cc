import HTTPTypes
import LookoutMessages
import LookoutModel

/// Reads the WebSocket messages of a switched exchange from copies of what its tunnel relays,
/// after the bytes are on their way: `ws.message` records, the summary's `messages` object and,
/// with a capture rule, `<id>.messages.jsonl`.
final class WebSocketWatch {  // confined to the tunnel's loop queue
    private let fromClient: WebSocketDecoder
    private let fromUpstream: WebSocketDecoder
    private let budget: DecodeBudget
    private let tally = MessageTally(protocolName: "websocket")
    private let previewBytes: Int
    private let opened = Instant.now()
    private let environment: ExchangeEnvironment
    private let eventContext: EventContext
    private let capture: MessageCapture?
    private let file: MessageCaptureFile?

    /// `switchFields`: the 101's fields (its `Sec-WebSocket-Extensions` says whether messages are deflated).
    init(settings: MessagesSettings, switchFields: HTTPFields?, environment: ExchangeEnvironment, eventContext: EventContext,
         capture: MessageCapture?) {
        let extensions = switchFields.map { fields in fields[values: HTTPField.Name("Sec-WebSocket-Extensions")!] } ?? []
        let deflate = PerMessageDeflate.negotiated(extensions)
        budget = DecodeBudget(bytes: settings.decodeBudgetBytes)
        let file = capture?.open(id: eventContext.requestID ?? 0)
        // A captured message is kept as far as the file may hold it; otherwise as far as its preview.
        let keep = file != nil ? Int(min(Int64(settings.decodeBudgetBytes), capture?.rule.maxBodyBytes ?? 0)) : settings.previewBytes
        fromClient = WebSocketDecoder(fromClient: true, deflate: deflate, budget: budget, keep: max(keep, settings.previewBytes))
        fromUpstream = WebSocketDecoder(fromClient: false, deflate: deflate, budget: budget, keep: max(keep, settings.previewBytes))
        tally.setDeflate(deflate != nil)
        previewBytes = settings.previewBytes
        self.environment = environment
        self.eventContext = eventContext
        self.capture = capture
        self.file = file
    }

    func clientBytes(_ bytes: UnsafeRawBufferPointer) {
        guard fromClient.stopped == nil else { return }
        for message in fromClient.feed(bytes) { passed(message, fromClient: true) }
    }

    func upstreamBytes(_ bytes: UnsafeRawBufferPointer) {
        guard fromUpstream.stopped == nil else { return }
        for message in fromUpstream.feed(bytes) { passed(message, fromClient: false) }
    }

    private func passed(_ message: WebSocketMessage, fromClient: Bool) {
        let milliseconds = Instant.now().milliseconds(since: opened)
        let from = fromClient ? "client" : "upstream"
        if message.opcode == .text || message.opcode == .binary {
            tally.message(fromClient: fromClient, bytes: message.bytes ?? message.wireBytes, at: milliseconds)
        }
        if message.opcode == .close { tally.closed(code: message.closeCode, reason: message.closeReason, fromClient: fromClient) }
        let isText = message.opcode == .text || message.opcode == .close
        let shown = message.opcode == .close ? Array(message.closeReason.map { Array($0.utf8) } ?? []) : message.payload
        environment.emit(eventContext, WebSocketDidPassMessage(
            from: from, opcode: message.opcode.name, wireBytes: message.wireBytes, bytes: message.bytes, frames: message.frames,
            compressed: message.compressed, milliseconds: milliseconds,
            preview: MessagePreviews.preview(shown, isText: isText, limit: previewBytes, truncated: message.truncated),
            closeCode: message.closeCode, closeReason: message.closeReason))
        guard let file else { return }
        var extra: [(String, String)] = []
        if message.compressed { extra.append(("compressed", "true")) }
        if let code = message.closeCode { extra.append(("close_code", String(code))) }
        file.write(from: from, milliseconds: milliseconds, kind: message.opcode.name, bytes: message.bytes,
                   payload: message.opcode == .close ? shown : message.payload, isText: isText,
                   whole: message.bytes != nil && !message.truncated, extra: extra)
    }

    /// The `messages` object so far.
    var summary: MessagesSummary {
        if budget.spent { tally.setDecoding("frame_headers") }
        if let reason = fromClient.stopped ?? fromUpstream.stopped { tally.setDecoding("stopped: \(reason)") }
        return tally.current
    }

    /// The tunnel is done: the summary, and the capture file's path if one was written.
    func finish() -> (MessagesSummary, String?) {
        if fromClient.stopped == nil, fromUpstream.stopped == nil { tally.endedWithoutClose() }
        guard let file, let capture else { return (summary, nil) }
        capture.finished(file)
        return (summary, file.path)
    }
}
