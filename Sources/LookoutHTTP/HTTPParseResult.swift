import HTTPTypes

/// Why the parsers refused a message; the proxy answers each with its own error code.
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

/// What one parse call produced: a head, a slice of body, or the message's end.
public enum HTTPParseEvent<Head: Sendable>: Sendable {
    case head(Head)
    /// A slice of the input buffer of this parse call (offsets relative to the input's start, 0).
    case body(Range<Int>)
    /// Message complete.
    case end(trailers: HTTPFields?)
}

extension HTTPParseEvent: Equatable where Head: Equatable {}
