import Foundation
import LookoutHTTP
import LookoutModel

/// The JSON the operator pages read (edits, answers, breakpoint rules) and write (held exchanges,
/// rules). What cannot be read is a `FieldError` that names the field.
enum OperatorJSON {
    struct FieldError: Error {
        let field: String
        let message: String
        init(_ field: String, _ message: String) {
            self.field = field
            self.message = message
        }
        var description: String { field.isEmpty ? message : "\(field): \(message)" }
    }

    /// The body as a JSON object; an empty body is an empty object.
    static func object(_ body: [UInt8]) throws(FieldError) -> [String: Any] {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [:] }
        guard let value = try? JSONSerialization.jsonObject(with: Data(body)), let object = value as? [String: Any] else {
            throw FieldError("", "the body must be a JSON object")
        }
        return object
    }

    private static func only(_ object: [String: Any], _ allowed: [String]) throws(FieldError) {
        for key in object.keys.sorted() where !allowed.contains(key) {
            throw FieldError(key, "unknown field (fields: \(allowed.joined(separator: ", ")))")
        }
    }

    static func string(_ object: [String: Any], _ key: String) throws(FieldError) -> String? {
        guard let value = object[key] else { return nil }
        guard let text = value as? String else { throw FieldError(key, "must be a string") }
        return text
    }

    private static func integer(_ object: [String: Any], _ key: String) throws(FieldError) -> Int? {
        guard let value = object[key] else { return nil }
        guard let number = value as? NSNumber, !(value is Bool), let int = Int(exactly: number.doubleValue) else {
            throw FieldError(key, "must be a whole number")
        }
        return int
    }

    /// `"body"` (text, sent as UTF-8) or `"body_base64"`, never both.
    private static func body(_ object: [String: Any]) throws(FieldError) -> [UInt8]? {
        let text = try string(object, "body")
        let base64 = try string(object, "body_base64")
        if text != nil && base64 != nil { throw FieldError("body", "give body or body_base64, not both") }
        if let text { return Array(text.utf8) }
        guard let base64 else { return nil }
        guard let data = Data(base64Encoded: base64, options: .ignoreUnknownCharacters) else {
            throw FieldError("body_base64", "is not base64")
        }
        return Array(data)
    }

    /// Header fields as an object (`{"name": "value"}`) or a list of pairs (`[["name", "value"]]`).
    private static func fields(_ value: Any, field: String) throws(FieldError) -> [(name: String, value: String)] {
        if let object = value as? [String: Any] {
            var fields: [(name: String, value: String)] = []
            for (name, value) in object.sorted(by: { $0.key < $1.key }) {
                guard let text = value as? String else { throw FieldError(field, "the value of \(name) must be a string") }
                fields.append((name, text))
            }
            return fields
        }
        if let list = value as? [Any] {
            var fields: [(name: String, value: String)] = []
            for pair in list {
                guard let pair = pair as? [Any], pair.count == 2, let name = pair[0] as? String, let text = pair[1] as? String else {
                    throw FieldError(field, "each field must be a [name, value] pair of strings")
                }
                fields.append((name, text))
            }
            return fields
        }
        throw FieldError(field, "must be an object of names and values, or a list of [name, value] pairs")
    }

    /// `{"method", "url", "headers": {"set": {}, "remove": []}, "body" | "body_base64", "status"}`.
    static func edits(_ body: [UInt8]) throws(FieldError) -> ExchangeEdits {
        try edits(object(body))
    }

    /// `extra`: other members the object may have (a hook's reply names its action).
    static func edits(_ object: [String: Any], extra: [String] = []) throws(FieldError) -> ExchangeEdits {
        try only(object, ["method", "url", "headers", "body", "body_base64", "status"] + extra)
        var edits = ExchangeEdits(method: try string(object, "method"), url: try string(object, "url"),
                                  status: try integer(object, "status"), body: try Self.body(object))
        if let headers = object["headers"] {
            guard let headers = headers as? [String: Any] else {
                throw FieldError("headers", "must be an object with \"set\" and \"remove\"")
            }
            try only(headers, ["set", "remove"])
            if let set = headers["set"] { edits.setHeaders = try fields(set, field: "headers.set") }
            if let remove = headers["remove"] {
                guard let names = remove as? [String] else { throw FieldError("headers.remove", "must be a list of names") }
                edits.removeHeaders = names
            }
        }
        return edits
    }

    /// `{"status", "headers", "body" | "body_base64"}`.
    static func answer(_ body: [UInt8]) throws(FieldError) -> OperatorAnswer {
        try answer(object(body))
    }

    static func answer(_ object: [String: Any], extra: [String] = []) throws(FieldError) -> OperatorAnswer {
        try only(object, ["status", "headers", "body", "body_base64"] + extra)
        guard let status = try integer(object, "status") else { throw FieldError("status", "is required") }
        guard (200...599).contains(status) else { throw FieldError("status", "\(status) is not a final status (200-599)") }
        let headers = try object["headers"].map { value throws(FieldError) in try fields(value, field: "headers") } ?? []
        return OperatorAnswer(status: status, headers: headers, body: try Self.body(object) ?? [])
    }

    /// `{"filter", "on": ["request", "response"], "timeout", "on_timeout"}`.
    static func rule(_ body: [UInt8]) throws(FieldError) -> BreakpointRuleSpec {
        let object = try object(body)
        try only(object, ["filter", "on", "timeout", "on_timeout"])
        guard let filter = try string(object, "filter") else { throw FieldError("filter", "is required") }
        var spec = BreakpointRuleSpec(filter: filter)
        if let on = object["on"] {
            let phases: [String]
            if let one = on as? String { phases = [one] } else if let list = on as? [String] { phases = list } else {
                throw FieldError("on", "must be a list of request and response")
            }
            for phase in phases where phase != "request" && phase != "response" {
                throw FieldError("on", "\"\(phase)\" is neither request nor response")
            }
            spec.onRequest = phases.contains("request")
            spec.onResponse = phases.contains("response")
        }
        if let timeout = object["timeout"] {
            guard let number = timeout as? NSNumber, !(timeout is Bool) else { throw FieldError("timeout", "must be seconds") }
            spec.timeout = number.doubleValue
        }
        if let text = try string(object, "on_timeout") {
            guard let action = BreakpointRuleSpec.TimeoutAction(rawValue: text) else {
                throw FieldError("on_timeout", "must be continue or abort, got \(text)")
            }
            spec.onTimeout = action
        }
        return spec
    }

    // MARK: - Writing

    static func quoted(_ text: String) -> String { JSONText.quoted(text) }

    private static func headerList(_ fields: [(name: String, value: String)]) -> String {
        "[" + fields.map { "[\(quoted($0.name)),\(quoted($0.value))]" }.joined(separator: ",") + "]"
    }

    private static func message(headers: [(name: String, value: String)], body: [UInt8], editable: Bool) -> String {
        var parts = ["\"headers\":\(headerList(headers))", "\"body_bytes\":\(body.count)", "\"body_editable\":\(editable)"]
        if let text = String(validating: body, as: UTF8.self) { parts.append("\"body\":\(quoted(text))") }
        parts.append("\"body_base64\":\(quoted(Data(body).base64EncodedString()))")
        return parts.joined(separator: ",")
    }

    /// One held exchange: where it is held, the request, and at a response breakpoint the response.
    static func held(_ held: HeldExchange, now: Instant) -> String {
        var request = "\"method\":\(quoted(held.method)),\"url\":\(quoted(held.url))"
        var response = ""
        if let status = held.status {
            response = ",\"response\":{\"status\":\(status),"
                + message(headers: held.headers, body: held.body, editable: held.bodyEditable) + "}"
        } else {
            request += "," + message(headers: held.headers, body: held.body, editable: held.bodyEditable)
        }
        let heldMilliseconds = Int(now.milliseconds(since: held.since))
        return "{\"id\":\(held.id),\"state\":\"held\",\"phase\":\(quoted(held.phase)),\"rule\":\(quoted(held.rule)),"
            + "\"held_ms\":\(heldMilliseconds),\"timeout_s\":\(held.timeout),\"on_timeout\":\(quoted(held.onTimeout)),"
            + "\"client\":\(quoted(held.client)),\"request\":{\(request)}\(response)}"
    }

    static func rule(id: Int, _ spec: BreakpointRuleSpec) -> String {
        "{\"id\":\(id),\"filter\":\(quoted(spec.filter)),\"on\":[\(spec.phases.map(quoted).joined(separator: ","))],"
            + "\"timeout\":\(spec.timeout),\"on_timeout\":\(quoted(spec.onTimeout.rawValue))}"
    }
}
