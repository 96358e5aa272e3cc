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
    /// compared byte by byte (ASCII case-insensitively) with no string made.
    public static func of(contentType: String?) -> StreamFormat? {
        guard let contentType else { return nil }
        let bytes = contentType.utf8
        // The media type: up to the parameters, optional whitespace trimmed (RFC 9110 §8.3.1).
        var start = bytes.startIndex
        var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while end > start, bytes[bytes.index(before: end)] == 0x20 || bytes[bytes.index(before: end)] == 0x09 {
            end = bytes.index(before: end)
        }
        let type = Substring(contentType)[start..<end].utf8
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

    /// Whether `bytes` begins with `lowercase` (a lowercase ASCII literal), ignoring ASCII case.
    private static func startsWith(_ bytes: Substring.UTF8View, _ lowercase: StaticString) -> Bool {
        guard bytes.count >= lowercase.utf8CodeUnitCount else { return false }
        var index = bytes.startIndex
        for offset in 0..<lowercase.utf8CodeUnitCount {
            let byte: UInt8 = bytes[index]
            let lower: UInt8 = lowercase.utf8Start[offset]
            guard byte == lower || (lower >= 0x61 && lower <= 0x7a && byte | 0x20 == lower) else { return false }
            index = bytes.index(after: index)
        }
        return true
    }
}
