/// One event of an event stream or one gRPC message, as it passed.
public struct StreamEvent: Sendable, Equatable {
    /// The SSE `event` field (`message` when none was given); nil for other formats.
    public var name: String?
    /// The SSE `id` field, if any.
    public var id: String?
    /// Bytes of the event on the wire (its lines, or its length prefix and message).
    public var bytes: Int
    /// The event's data (SSE's `data` lines joined), up to the splitter's keep limit.
    public var data: [UInt8]
    public var truncated: Bool
    /// gRPC: the message's compressed flag (gRPC over HTTP/2, "Length-Prefixed-Message").
    public var compressed = false

    public init(name: String? = nil, id: String? = nil, bytes: Int, data: [UInt8], truncated: Bool) {
        self.name = name
        self.id = id
        self.bytes = bytes
        self.data = data
        self.truncated = truncated
    }
}

/// The formats split into events.
public enum StreamFormat: String, Sendable {
    case sse, ndjson, jsonSeq = "json-seq", grpc, grpcWeb = "grpc-web"

    /// The format a `Content-Type` names, if it is one of these. Read for every response, so
    /// compared in the string's own UTF-8, ASCII case-insensitively, with no string made.
    public static func of(contentType: String?) -> StreamFormat? {
        guard var contentType else { return nil }
        return contentType.withUTF8 { bytes in
            // The media type: up to the parameters, optional whitespace trimmed (RFC 9110 §8.3.1).
            var start = 0
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            let type = UnsafeBufferPointer(rebasing: bytes[start..<end])
            func named(_ literal: StaticString) -> Bool {
                type.count == literal.utf8CodeUnitCount && startsWith(type, literal)
            }
            if named("text/event-stream") { return .sse }
            if named("application/x-ndjson") || named("application/jsonl") || named("application/x-jsonlines")
                || named("application/jsonlines") { return .ndjson }
            if named("application/json-seq") { return .jsonSeq }
            if named("application/grpc-web") || named("application/grpc-web+proto") { return .grpcWeb }
            if named("application/grpc") { return .grpc }
            // `application/grpc+proto`, `+json`, …: any gRPC subtype suffix.
            let prefix: StaticString = "application/grpc+"
            if type.count > prefix.utf8CodeUnitCount, startsWith(type, prefix) { return .grpc }
            return nil
        }
    }

    /// Whether `bytes` begins with `lowercase` (a lowercase ASCII literal), ignoring ASCII case.
    private static func startsWith(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count >= lowercase.utf8CodeUnitCount else { return false }
        for offset in 0..<lowercase.utf8CodeUnitCount {
            let byte = bytes[offset]
            let lower: UInt8 = lowercase.utf8Start[offset]
            guard byte == lower || (lower >= 0x61 && lower <= 0x7a && byte | 0x20 == lower) else { return false }
        }
        return true
    }
}
