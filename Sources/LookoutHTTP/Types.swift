import HTTPTypes

/// An HTTP protocol version: 1.0 and 1.1 on the HTTP/1 wire, 2 for requests that arrived over an
/// HTTP/2 stream (their heads are translated, never parsed).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public static let http2 = HTTPVersion(major: 2, minor: 0)

    /// "HTTP/1.1", "HTTP/2" (RFC 9113 names the protocol without a minor version).
    public var description: String {
        // Every exchange's summary names its version: the usual ones without interpolating.
        switch (major, minor) {
        case (1, 1): return "HTTP/1.1"
        case (1, 0): return "HTTP/1.0"
        case (2, _): return "HTTP/2"
        default: return major >= 2 ? "HTTP/\(major)" : "HTTP/\(major).\(minor)"
        }
    }
}

/// Limits enforced incrementally while bytes arrive.
public struct HTTPParserLimits: Sendable {
    /// Request line (without its CRLF) longer than this -> `.requestLineTooLong`, even before the CRLF arrives.
    public var maxRequestLineBytes: Int
    /// Whole head including the start line and the final empty line -> `.headerSectionTooLarge`.
    public var maxHeaderBytes: Int
    /// Number of header (or trailer) field lines -> `.tooManyHeaders`.
    public var maxHeaderCount: Int
    /// Chunk-size line including extensions (without its CRLF) -> `.invalidChunkedEncoding`.
    public var maxChunkLineBytes: Int
    /// Trailer section including its final empty line -> `.headerSectionTooLarge`.
    public var maxTrailerBytes: Int

    public init(
        maxRequestLineBytes: Int = 8192,
        maxHeaderBytes: Int = 65536,
        maxHeaderCount: Int = 128,
        maxChunkLineBytes: Int = 4096,
        maxTrailerBytes: Int = 16384
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }
}

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

public enum HTTPParseError: Error, Sendable, Equatable {
    case requestLineTooLong, headerSectionTooLarge, tooManyHeaders
    case invalidRequestLine, invalidStatusLine, unsupportedVersion
    case invalidHeaderName, invalidHeaderValue, obsoleteLineFolding, bareCarriageReturn
    /// Both Content-Length and Transfer-Encoding.
    case conflictingFraming
    /// Non-digits, overflow, or several differing values.
    case invalidContentLength
    /// Transfer-Encoding whose final coding is not chunked, an unknown coding, chunked twice,
    /// or Transfer-Encoding in an HTTP/1.0 message.
    case unsupportedTransferCoding
    /// Bad hex, overflow, chunk line too long, missing CRLF after data, bad trailer framing.
    case invalidChunkedEncoding
    /// `finish()` called mid-message.
    case unexpectedEndOfStream
    /// HTTP/1.1 request without Host, or more than one Host.
    case missingHost
}

public enum HTTPParseEvent<Head: Sendable>: Sendable {
    case head(Head)
    /// A slice of the input buffer of this parse call (offsets relative to the input's start, 0).
    case body(Range<Int>)
    /// Message complete.
    case end(trailers: HTTPFields?)
}

extension HTTPParseEvent: Equatable where Head: Equatable {}
