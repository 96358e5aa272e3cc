import LookoutHTTP

/// The checks RFC 9113 §8 makes of a request's header sections, for sessions where nghttp2's own
/// (`nghttp2_option_set_no_http_messaging`) are off because a forward proxy's client may send an
/// absolute-form `:path`, which nghttp2 refuses with `:scheme` http. Everything else nghttp2
/// would refuse is refused here, with the rule it breaks.
public enum HTTP2RequestValidation {
    /// Why a request's header section is malformed (§8.1.1), or nil when it is not.
    public static func problem(inRequest headers: [HTTP2Header]) -> String? {
        var seen: Set<String> = []
        var regularStarted = false
        var method: String?, path: String?, scheme: String?
        for header in headers {
            if let problem = fieldProblem(header) { return problem }
            if header.isPseudo {
                // §8.3: pseudo-header fields come first, once each, and only those defined.
                if regularStarted { return "pseudo-header field \(header.name) after a regular field (RFC 9113 §8.3)" }
                switch header.name {
                case ":method": method = header.value
                case ":path": path = header.value
                case ":scheme": scheme = header.value
                case ":authority", ":protocol": break
                default: return "unknown pseudo-header field \(header.name) (RFC 9113 §8.3)"
                }
                guard seen.insert(header.name).inserted else { return "\(header.name) twice (RFC 9113 §8.3.1)" }
            } else {
                regularStarted = true
                if let problem = regularFieldProblem(header) { return problem }
            }
        }
        guard let method, !method.isEmpty else { return "no :method (RFC 9113 §8.3.1)" }
        if method == "CONNECT" { return nil }
        // §8.3.1: every other request names :scheme and a non-empty :path.
        guard let scheme, !scheme.isEmpty else { return "no :scheme (RFC 9113 §8.3.1)" }
        guard let path, !path.isEmpty else { return "no :path (RFC 9113 §8.3.1)" }
        return nil
    }

    /// Why a trailer section is malformed: it carries no pseudo-header fields (§8.1).
    public static func problem(inTrailers headers: [HTTP2Header]) -> String? {
        for header in headers {
            if let problem = fieldProblem(header) { return problem }
            if header.isPseudo { return "pseudo-header field \(header.name) in trailers (RFC 9113 §8.1)" }
            if let problem = regularFieldProblem(header) { return problem }
        }
        return nil
    }

    /// The value of a request's `content-length`, checked: digits only (RFC 9110 §8.6); nil
    /// when there is none; `.failure` when it is not a length.
    public static func contentLength(in headers: [HTTP2Header]) -> Result<UInt64?, HTTP2RequestValidationError> {
        var length: UInt64?
        for header in headers where header.name == "content-length" {
            guard let value = UInt64(header.value), header.value.utf8.allSatisfy({ $0 &- 0x30 < 10 }),
                  length == nil || length == value else {
                return .failure(HTTP2RequestValidationError(reason: "content-length \"\(header.value)\" (RFC 9110 §8.6)"))
            }
            length = value
        }
        return .success(length)
    }

    /// §8.2.1: a name is lowercase token characters (a pseudo-header's after its colon); a value
    /// has no NUL, CR or LF, and no whitespace at either end.
    private static func fieldProblem(_ header: HTTP2Header) -> String? {
        let name = header.isPseudo ? header.name.utf8.dropFirst() : header.name.utf8[...]
        guard !name.isEmpty, name.allSatisfy(isLowercaseTokenByte) else {
            return "invalid field name \"\(header.name)\" (RFC 9113 §8.2.1)"
        }
        let value = header.value.utf8
        if value.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D }) {
            return "field \(header.name) with NUL, CR or LF in its value (RFC 9113 §8.2.1)"
        }
        if let first = value.first, let last = value.last, isWhitespace(first) || isWhitespace(last) {
            return "field \(header.name) with whitespace around its value (RFC 9113 §8.2.1)"
        }
        return nil
    }

    /// §8.2.2: no connection-specific fields; `te` only as "trailers".
    private static func regularFieldProblem(_ header: HTTP2Header) -> String? {
        guard HopByHopHeaders.isConnectionSpecific(header.name) else { return nil }
        if header.name == "te" && header.value.lowercased() == "trailers" { return nil }
        return "connection-specific field \(header.name) (RFC 9113 §8.2.2)"
    }

    private static func isLowercaseTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
}

/// A `content-length` that is not one length.
public struct HTTP2RequestValidationError: Error, Sendable, Equatable {
    public let reason: String
}
