import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// A stage's edits of a request it holds, checked whole before any is applied: a method a
/// request can be sent with, an absolute http(s) URL, field names and values, and a body only
/// when the one held is complete. Nil fields are left as they are.
struct CheckedRequestEdits {
    var method: HTTPRequest.Method?
    var route: StageRoute?
    var fields: HTTPFields
    var body: [UInt8]?
    /// The Host the edits set, which the first hop then carries.
    var hostField: String?

    /// The edits for `head`, or what cannot be applied, naming the field. `bodyHeldWhole`: the
    /// body the stage holds is the whole of it (or there is none).
    static func check(_ edits: ExchangeEdits, against head: RequestHead, bodyHeldWhole: Bool) -> Result<Self, EditRefusal> {
        if edits.status != nil { return .failure("status: only a response has a status (this is the request)") }
        var checked = CheckedRequestEdits(fields: head.headerFields, body: edits.body)
        if let text = edits.method {
            guard let parsed = HTTPRequest.Method(text), text != "CONNECT" else {
                return .failure("method: \"\(text)\" is not a method a request can be sent with")
            }
            checked.method = parsed
        }
        if let url = edits.url {
            guard case .absolute(let scheme, let host, let port, let path)? = RequestTarget.parseAbsolute(url),
                  scheme == "http" || scheme == "https" else {
                return .failure("url: \"\(url)\" is not an absolute http or https URL")
            }
            let secure = scheme == "https"
            checked.route = StageRoute(origin: Origin(host: host, port: port ?? (secure ? 443 : 80), isSecure: secure),
                                       path: path, url: url)
        }
        if let problem = edits.apply(to: &checked.fields) { return .failure(EditRefusal(problem)) }
        if edits.body != nil, !bodyHeldWhole {
            return .failure("body: the request body was not held whole (longer than max_body_bytes, or still arriving), so it cannot be replaced")
        }
        if let body = edits.body { checked.fields.describe(body: body) }
        checked.hostField = edits.setHeaders.last(where: { $0.name.lowercased() == "host" })?.value
        return .success(checked)
    }
}

/// A stage's edits of a response head (and complete body) it holds, checked as
/// `CheckedRequestEdits` are.
struct CheckedResponseEdits {
    var status: Int?
    var fields: HTTPFields
    var body: [UInt8]?

    static func check(_ edits: ExchangeEdits, fields: HTTPFields, bodyHeldWhole: Bool) -> Result<Self, EditRefusal> {
        if edits.method != nil { return .failure("method: only a request's method can be changed") }
        if edits.url != nil { return .failure("url: only a request's URL can be changed") }
        if let status = edits.status, !(200...599).contains(status) {
            return .failure("status: \(status) is not a final status (200-599)")
        }
        var checked = CheckedResponseEdits(status: edits.status, fields: fields, body: edits.body)
        if let problem = edits.apply(to: &checked.fields) { return .failure(EditRefusal(problem)) }
        if edits.body != nil, !bodyHeldWhole {
            return .failure("body: the response body was not held whole (longer than max_body_bytes, or still arriving), so it cannot be replaced")
        }
        if let body = edits.body { checked.fields.describe(body: body) }
        return .success(checked)
    }
}

/// Why edits were refused, naming the field (the operator's and the hook's answer).
struct EditRefusal: Error, ExpressibleByStringInterpolation, Sendable {
    let message: String

    init(stringLiteral message: String) {
        self.message = message
    }

    init(_ message: String) {
        self.message = message
    }
}

extension ExchangeEdits {
    /// Sets and removes fields; the framing fields follow the body and cannot be set. Nil when
    /// done, else what cannot be applied (then `fields` is unchanged).
    func apply(to fields: inout HTTPFields) -> String? {
        var changes: [(HTTPField.Name, String?)] = []
        for name in removeHeaders {
            guard let parsed = HTTPField.Name(name) else { return "headers.remove: \"\(name)\" is not a field name" }
            changes.append((parsed, nil))
        }
        for (name, value) in setHeaders {
            guard let parsed = HTTPField.Name(name) else { return "headers.set: \"\(name)\" is not a field name" }
            if parsed == .contentLength || parsed == .transferEncoding {
                return "headers.set: \(name) follows the body and cannot be set (send \"body\" instead)"
            }
            // RFC 9110 §5.5: no CR, LF or NUL in a field value.
            guard HTTPField.isValidValue(value) else {
                return "headers.set: the value of \(name) has characters a field value cannot carry"
            }
            changes.append((parsed, value))
        }
        for (name, value) in changes { fields[name] = value }
        return nil
    }
}

extension HTTPFields {
    /// A replaced body is sent whole with its length (RFC 9112 §6.2), never chunked.
    mutating func describe(body: [UInt8]) {
        self[.contentLength] = String(body.count)
        self[.transferEncoding] = nil
    }
}
