import Foundation
import LookoutHTTP
import LookoutModel

/// A message as a hook sees it: the request (method, URL) or the response (status), its fields,
/// and its body when it was held whole and is at most the hook's `max_body_bytes`.
public struct HookMessage: Sendable {
    public var method: String?
    public var url: String?
    public var status: Int?
    public var headers: [(name: String, value: String)]
    /// Nil with `bodyTruncated` for a body the hook does not get.
    public var body: [UInt8]?
    public var bodyTruncated: Bool

    public init(method: String? = nil, url: String? = nil, status: Int? = nil, headers: [(name: String, value: String)],
                body: [UInt8]?, bodyTruncated: Bool) {
        self.method = method
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyTruncated = bodyTruncated
    }
}

/// What a hook answered.
public enum HookReply: Sendable, Equatable {
    /// `{"action": "continue"}`: nothing to change.
    case proceed
    /// `{"action": "modify", …edits}`: the edits of `POST /exchanges/ID/resume`.
    case modify(ExchangeEdits)
    /// `{"action": "answer", "status", "headers", "body"}`: this response instead.
    case answer(OperatorAnswer)
    /// `{"action": "abort", "reason"}`: the client gets `502 hook_failed`.
    case abort(reason: String)

    public var action: String {
        switch self {
        case .proceed: return "continue"
        case .modify: return "modify"
        case .answer: return "answer"
        case .abort: return "abort"
        }
    }
}

/// The hooks' wire format, one JSON object per call and per reply (a line each for a command hook,
/// a POST body and its response body for an HTTP hook).
public enum HookProtocol {
    /// `{"phase", "id", "request": {...}, "response": {...}}`, without a line end.
    public static func call(phase: String, id: UInt64, hook: String, request: HookMessage, response: HookMessage?) -> [UInt8] {
        var text = "{\"phase\":\(JSONText.quoted(phase)),\"id\":\(id),\"hook\":\(JSONText.quoted(hook)),\"request\":"
        text += message(request)
        if let response { text += ",\"response\":" + message(response) }
        text += "}"
        return Array(text.utf8)
    }

    private static func message(_ message: HookMessage) -> String {
        var parts: [String] = []
        if let method = message.method { parts.append("\"method\":\(JSONText.quoted(method))") }
        if let url = message.url { parts.append("\"url\":\(JSONText.quoted(url))") }
        if let status = message.status { parts.append("\"status\":\(status)") }
        let headers = message.headers.map { "[\(JSONText.quoted($0.name)),\(JSONText.quoted($0.value))]" }
        parts.append("\"headers\":[\(headers.joined(separator: ","))]")
        if let body = message.body { parts.append("\"body_base64\":\"\(Data(body).base64EncodedString())\"") }
        if message.bodyTruncated { parts.append("\"body_truncated\":true") }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// A reply, or what is wrong with it (naming the field).
    public static func reply(_ bytes: [UInt8]) -> Result<HookReply, HookReplyError> {
        do throws(OperatorJSON.FieldError) {
            let object = try OperatorJSON.object(bytes)
            guard let action = try OperatorJSON.string(object, "action") else {
                throw OperatorJSON.FieldError("action", "is required (continue, modify, answer or abort)")
            }
            let echoed = ["action", "id", "phase", "hook"]
            switch action {
            case "continue":
                return .success(.proceed)
            case "modify":
                return .success(.modify(try OperatorJSON.edits(object, extra: echoed)))
            case "answer":
                return .success(.answer(try OperatorJSON.answer(object, extra: echoed)))
            case "abort":
                return .success(.abort(reason: try OperatorJSON.string(object, "reason") ?? "the hook answered abort"))
            default:
                throw OperatorJSON.FieldError("action", "\"\(action)\" is not continue, modify, answer or abort")
            }
        } catch {
            return .failure(HookReplyError(message: error.description))
        }
    }

    /// The `id` and `phase` a reply names, when it names them (replies are matched to calls by
    /// them, else in order).
    public static func replyKey(_ bytes: [UInt8]) -> (id: UInt64, phase: String)? {
        guard let object = try? OperatorJSON.object(bytes), let id = (object["id"] as? NSNumber)?.uint64Value,
              let phase = object["phase"] as? String else { return nil }
        return (id, phase)
    }
}

public struct HookReplyError: Error, Sendable {
    public let message: String
}
