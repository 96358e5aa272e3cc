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

    /// The format a `Content-Type` names, if it is one of these.
    public static func of(contentType: String?) -> StreamFormat? {
        guard let contentType else { return nil }
        let type = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: " \t").lowercased() } ?? ""
        switch type {
        case "text/event-stream": return .sse
        case "application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines": return .ndjson
        case "application/json-seq": return .jsonSeq
        case "application/grpc-web", "application/grpc-web+proto": return .grpcWeb
        default: return type == "application/grpc" || type.hasPrefix("application/grpc+") ? .grpc : nil
        }
    }
}
