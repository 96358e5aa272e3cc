/// Splits a gRPC body into its Length-Prefixed-Messages as they pass (gRPC over HTTP/2: a
/// compressed-flag byte, a 4-byte big-endian length, the message). For gRPC-Web a frame with the
/// high bit of its flag set is the trailers frame: its `grpc-status` and `grpc-message` are read.
public final class GRPCMessageSplitter: @unchecked Sendable {  // confined to the exchange's loop queue
    private let keep: Int
    private let web: Bool
    private var prefix: [UInt8] = []
    private var remaining = 0
    private var current: StreamEvent?
    private var isTrailers = false
    private var trailerText: [UInt8] = []
    /// gRPC-Web: the trailers frame's fields.
    public private(set) var trailers: [(String, String)] = []

    public init(keep: Int, web: Bool = false) {
        self.keep = keep
        self.web = web
    }

    public func feed(_ bytes: UnsafeRawBufferPointer) -> [StreamEvent] {
        var events: [StreamEvent] = []
        var offset = 0
        while offset < bytes.count {
            if current == nil {
                prefix.append(bytes[offset])
                offset += 1
                guard prefix.count == 5 else { continue }
                remaining = Int(prefix[1]) << 24 | Int(prefix[2]) << 16 | Int(prefix[3]) << 8 | Int(prefix[4])
                isTrailers = web && prefix[0] & 0x80 != 0
                var event = StreamEvent(bytes: 5 + remaining, data: [], truncated: false)
                event.compressed = prefix[0] & 0x01 != 0
                current = event
                prefix.removeAll(keepingCapacity: true)
                if remaining == 0 { end(into: &events) }
                continue
            }
            let take = min(remaining, bytes.count - offset)
            let piece = bytes[offset..<(offset + take)]
            if isTrailers {
                if trailerText.count < 8192 { trailerText += piece.prefix(8192 - trailerText.count) }
            } else if var event = current, event.data.count < keep {
                event.data += piece.prefix(keep - event.data.count)
                current = event
            }
            remaining -= take
            offset += take
            if remaining == 0 { end(into: &events) }
        }
        return events
    }

    private func end(into events: inout [StreamEvent]) {
        guard var event = current else { return }
        current = nil
        if isTrailers {
            for line in String(decoding: trailerText, as: UTF8.self).split(whereSeparator: \.isNewline) {
                guard let colon = line.firstIndex(of: ":") else { continue }
                trailers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: " \t")))
            }
            trailerText = []
            return
        }
        event.truncated = event.bytes - 5 > event.data.count
        events.append(event)
    }
}
