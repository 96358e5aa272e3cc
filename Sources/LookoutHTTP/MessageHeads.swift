import HTTPTypes

/// How the body of a message is delimited (RFC 9112 §6.3).
public enum BodyFraming: Sendable, Equatable {
    case none
    case contentLength(UInt64)
    case chunked
    case untilClose
}

/// The decoded request-target (RFC 9112 §3.2).
public enum RequestTarget: Sendable, Equatable {
    /// "/a?b"
    case origin(path: String)
    /// Scheme and host lowercased, IPv6 host without brackets, path in origin-form ("/" if empty, query kept).
    case absolute(scheme: String, host: String, port: Int?, path: String)
    /// CONNECT host:port (IPv6 host without brackets).
    case authority(host: String, port: Int)
    /// OPTIONS *
    case asterisk
}

/// A request's head as parsed from HTTP/1 bytes (RFC 9112 §2–§3), or translated from an HTTP/2
/// stream's fields, with what framing and connection handling follow from it.
public struct RequestHead: Sendable, Equatable {
    public var method: HTTPRequest.Method
    public var rawTarget: String
    public var target: RequestTarget
    public var version: HTTPVersion
    /// Order and original name case preserved.
    public var headerFields: HTTPFields
    /// RFC 9112 §6.3 for requests: TE chunked -> .chunked, CL -> .contentLength, else .none (never .untilClose).
    /// CONNECT is always `.none` (a valid Content-Length on CONNECT is ignored).
    public var framing: BodyFraming
    /// HTTP/1.1: true unless "Connection: close"; HTTP/1.0: only with "Connection: keep-alive".
    public var keepAlive: Bool
    /// "Expect: 100-continue" (case-insensitive) on an HTTP/1.1 request (ignored for HTTP/1.0, RFC 9110 §10.1.1).
    public var expectsContinue: Bool
    /// The Upgrade header value when Connection lists "upgrade" (HTTP/1.1 only, never for CONNECT).
    public var upgrade: String?
    /// Bytes of the head on the wire including the final CRLF (leading empty lines not counted).
    public var headLength: Int
    /// Content-Length arrived as a list of identical values (`5,5`, or repeated fields): forward
    /// one value instead (RFC 9110 §8.6).
    public var contentLengthIsList = false

    public init(
        method: HTTPRequest.Method, rawTarget: String, target: RequestTarget, version: HTTPVersion,
        headerFields: HTTPFields, framing: BodyFraming, keepAlive: Bool, expectsContinue: Bool,
        upgrade: String?, headLength: Int
    ) {
        self.method = method
        self.rawTarget = rawTarget
        self.target = target
        self.version = version
        self.headerFields = headerFields
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
        self.upgrade = upgrade
        self.headLength = headLength
    }
}

/// A response's head as parsed from HTTP/1 bytes (RFC 9112 §4), with its framing for the request's
/// method and whether the connection stays open after it.
public struct ResponseHead: Sendable, Equatable {
    public var status: Int
    public var reasonPhrase: String
    public var version: HTTPVersion
    public var headerFields: HTTPFields
    /// RFC 9112 §6.3 for responses given the request method.
    public var framing: BodyFraming
    /// False if Connection: close, HTTP/1.0 without keep-alive, framing == .untilClose,
    /// a 101 response, or a 2xx answer to CONNECT (the connection becomes a tunnel).
    public var keepAlive: Bool
    public var headLength: Int
    /// As for requests: a list of identical Content-Length values, to be forwarded as one.
    public var contentLengthIsList = false

    public init(
        status: Int, reasonPhrase: String, version: HTTPVersion, headerFields: HTTPFields,
        framing: BodyFraming, keepAlive: Bool, headLength: Int
    ) {
        self.status = status
        self.reasonPhrase = reasonPhrase
        self.version = version
        self.headerFields = headerFields
        self.framing = framing
        self.keepAlive = keepAlive
        self.headLength = headLength
    }
}
