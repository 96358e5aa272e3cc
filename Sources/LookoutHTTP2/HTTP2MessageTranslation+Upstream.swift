import HTTPTypes
import LookoutHTTP

/// The other direction: requests going to an HTTP/2 origin, and its responses coming back as the
/// heads the pipeline (and an HTTP/1.1 client) works with (RFC 9113 §8.2, §8.3).
extension HTTP2MessageTranslation {
    /// A request's header section for an HTTP/2 origin (§8.3.1): `:method`, `:scheme`,
    /// `:authority` (from the Host the request would carry on HTTP/1.1) and `:path`, then the
    /// fields with lowercase names. Connection-specific fields are left out (§8.2.2) — `TE`
    /// only as `trailers`, sent when `acceptsTrailers` (gRPC needs it) — and `Host` is the `:authority`.
    public static func requestHeaders(method: String, scheme: String, authority: String, path: String,
                                      fields: HTTPFields, acceptsTrailers: Bool) -> [HTTP2Header] {
        var headers: [HTTP2Header] = []
        headers.reserveCapacity(fields.count + 5)
        forEachRequestField(method: method, scheme: scheme, authority: authority, path: path, fields: fields,
                            acceptsTrailers: acceptsTrailers) { name, value in headers.append(HTTP2Header(name, value)) }
        return headers
    }

    /// The same section written straight from the fields (`HTTP2ClientSession.submitRequest`);
    /// at most `fields.count + 5` of them.
    static func writeRequest(method: String, scheme: String, authority: String, path: String, fields: HTTPFields,
                             acceptsTrailers: Bool, to writer: inout HTTP2SectionWriter) {
        forEachRequestField(method: method, scheme: scheme, authority: authority, path: path, fields: fields,
                            acceptsTrailers: acceptsTrailers) { name, value in writer.append(name, value) }
    }

    /// The request section's fields in order, for both of the above.
    private static func forEachRequestField(method: String, scheme: String, authority: String, path: String,
                                            fields: HTTPFields, acceptsTrailers: Bool,
                                            _ body: (_ name: String, _ value: String) -> Void) {
        body(":method", method)
        body(":scheme", scheme)
        body(":authority", authority)
        body(":path", path)
        ForwardedFields(of: fields, isRequest: true).forEach(body)
        if acceptsTrailers { body("te", "trailers") }
    }

    /// The response head an HTTP/2 response header section stands for: the status, a reason
    /// phrase for HTTP/1.1 (HTTP/2 has none, §8.3.2), the fields, and how the body is framed —
    /// `content-length` when the origin gave one (nghttp2 checks it against the DATA frames),
    /// none after END_STREAM (an empty body gets `content-length: 0`, so an HTTP/1.1 client
    /// need not wait for a close), otherwise unknown, which an HTTP/1.1 client gets chunked.
    /// nil when `:status` is missing or not a status code (nghttp2 has already refused that).
    public static func responseHead(_ headers: [HTTP2Header], endStream: Bool, fieldBytes: Int,
                                    requestMethod: HTTPRequest.Method) -> ResponseHead? {
        var status: Int?
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for header in headers {
            if header.isPseudo {
                if header.name == ":status" { status = Int(header.value) }
                continue
            }
            guard let name = HTTPField.Name(header.name) else { continue }
            fields.appendField(HTTPField(name: name, value: header.value))
        }
        guard let status, (100...999).contains(status) else { return nil }
        let framing: BodyFraming
        let bodiless = requestMethod == .head || status < 200 || status == 204 || status == 304
        if bodiless {
            framing = .none
        } else if let length = fields.value(for: .contentLength).flatMap(UInt64.init) {
            framing = .contentLength(length)
        } else if endStream {
            fields.setValue("0", for: .contentLength)
            framing = .contentLength(0)
        } else {
            framing = .chunked
        }
        return ResponseHead(status: status, reasonPhrase: ReasonPhrase.standard(for: status),
                            version: .http2, headerFields: fields, framing: framing, keepAlive: true,
                            headLength: fieldBytes)
    }

    /// Trailer fields (§8.1) as an HTTP/1.1 trailer section carries them.
    public static func fields(_ headers: [HTTP2Header]) -> HTTPFields {
        var fields = HTTPFields()
        for header in headers where !header.isPseudo {
            if let name = HTTPField.Name(header.name) { fields.appendField(HTTPField(name: name, value: header.value)) }
        }
        return fields
    }
}
