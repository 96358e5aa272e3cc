import HTTPTypes
import LookoutHTTP

/// Why an HTTP/2 request cannot become a request head; nghttp2 has already refused what RFC 9113
/// §8 calls malformed, so these are what is left for the proxy to judge.
public enum HTTP2RequestProblem: Error, Equatable, Sendable {
    /// Neither `:authority` nor `Host` (RFC 9113 §8.3.1).
    case missingAuthority
    /// A method Lookout does not serve on a stream: CONNECT (§8.5) and extended CONNECT (RFC 8441).
    case connectNotSupported
    /// A field name or value the HTTP/1.1 side could not carry.
    case invalidField(String)
}

/// Translation between HTTP/2 header sections and the HTTP/1.1 heads the pipeline works with
/// (RFC 9113 §8.2 and §8.3): pseudo-header fields ↔ request line and Host, cookie crumbs
/// joined, connection-specific fields removed.
public enum HTTP2MessageTranslation {
    /// The request head an HTTP/2 request stands for. The target is origin-form (`:path`); `Host`
    /// carries `:authority` (§8.3.1: an intermediary converting to HTTP/1.1 creates it from
    /// there). Without END_STREAM the body's length is its `content-length` (which nghttp2 checks
    /// against the DATA frames, §8.1.1) or unknown, which HTTP/1.1 sends chunked.
    public static func requestHead(_ headers: [HTTP2Header], endStream: Bool, fieldBytes: Int)
        -> Result<(head: RequestHead, authority: String?), HTTP2RequestProblem>
    {
        var method = "", path = "", authority: String?, protocolName: String?
        var cookies: [String] = []
        var host: String?
        // A pseudo-field RFC 9113 §8.3.1 does not define (nghttp2 resets such a stream first;
        // refused here as well, as before this loop looked at pseudo-fields alone).
        var unknownPseudo: String?
        // First the fields that become something else, so `Host` (and the joined cookie) can be
        // appended first: inserting at the front rebuilt the field storage every time.
        for header in headers {
            if header.isPseudo {
                switch header.name {
                case ":method": method = header.value
                case ":path": path = header.value
                case ":authority": authority = header.value
                case ":protocol": protocolName = header.value
                case ":scheme": break
                default: unknownPseudo = unknownPseudo ?? header.name
                }
            } else if isCookieOrHost(header.name) {
                // One of the two, and their lengths tell which: "cookie" has 6 bytes, "host" 4.
                if header.name.utf8.count == 6 { cookies.append(header.value) } else { host = header.value }
            }
        }
        if method == "CONNECT" || protocolName != nil { return .failure(.connectNotSupported) }
        guard let hostValue = authority ?? host, !hostValue.isEmpty else { return .failure(.missingAuthority) }
        guard let parsedMethod = HTTPRequest.Method(method) else { return .failure(.invalidField(":method")) }
        if let unknownPseudo { return .failure(.invalidField(unknownPseudo)) }
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        fields.appendField(HTTPField(name: .host, value: hostValue))
        // §8.2.3: crumbs split for compression are joined with "; " for HTTP/1.1.
        if !cookies.isEmpty { fields.appendField(HTTPField(name: .cookie, value: cookies.joined(separator: "; "))) }
        for header in headers where !header.isPseudo && !isCookieOrHost(header.name) {
            guard let name = HTTPField.Name(header.name) else { return .failure(.invalidField(header.name)) }
            fields.appendField(HTTPField(name: name, value: header.value))
        }
        let framing: BodyFraming
        if endStream {
            framing = .none
        } else if let length = fields.value(for: .contentLength).flatMap(UInt64.init) {
            framing = .contentLength(length)
        } else {
            framing = .chunked
        }
        let head = RequestHead(method: parsedMethod, rawTarget: path, target: .origin(path: path), version: .http2,
                               headerFields: fields, framing: framing, keepAlive: true, expectsContinue: false,
                               upgrade: nil, headLength: fieldBytes)
        return .success((head, authority ?? host))
    }

    /// Response (or trailer) fields for an HTTP/2 stream: lowercase names (§8.2.1), without the
    /// connection-specific fields and any the `Connection` field names (§8.2.2).
    public static func headers(_ fields: HTTPFields) -> [HTTP2Header] {
        var headers: [HTTP2Header] = []
        headers.reserveCapacity(fields.count)
        ForwardedFields(of: fields, isRequest: false).forEach { name, value in headers.append(HTTP2Header(name, value)) }
        return headers
    }

    /// A response's header section as it goes out (§8.3.2): `:status`, then `headers(fields)`,
    /// written straight from the fields.
    static func writeResponse(status: Int, fields: HTTPFields, to writer: inout HTTP2SectionWriter) {
        writer.append(":status", String(status))
        ForwardedFields(of: fields, isRequest: false).forEach { name, value in writer.append(name, value) }
    }

    /// The fields of a message that an HTTP/2 header section carries, by their lowercase names
    /// (§8.2.1): not the connection-specific ones, nor those the message's `Connection` field
    /// names (§8.2.2), and for a request not `Host`, which `:authority` carries (§8.3.1).
    struct ForwardedFields {
        private let fields: HTTPFields
        private let isRequest: Bool
        private var named: Set<String> = []

        init(of fields: HTTPFields, isRequest: Bool) {
            self.fields = fields
            self.isRequest = isRequest
            if let connection = fields.value(for: .connection) {
                FieldList.forEachElement(of: connection) { element in named.insert(element.string.lowercased()) }
            }
        }

        /// The fields are lent (`withFieldBuffer`), not copied one by one as `for field in fields` does.
        func forEach(_ body: (_ name: String, _ value: String) -> Void) {
            fields.withFieldBuffer { buffer in
                for index in buffer.indices {
                    let name = buffer[index].name.canonicalName
                    if (isRequest && name.utf8.count == 4 && name == "host") || HopByHopHeaders.isConnectionSpecific(name)
                        || (!named.isEmpty && named.contains(name)) { continue }
                    body(name, buffer[index].value)
                }
            }
        }
    }


    /// `cookie` or `host` (lowercase, as HTTP/2 names are): the two request fields that become
    /// something else on the way to HTTP/1.1. Ruled out by length first, as above.
    static func isCookieOrHost(_ name: String) -> Bool {
        switch name.utf8.count {
        case 4: name == "host"
        case 6: name == "cookie"
        default: false
        }
    }
}
