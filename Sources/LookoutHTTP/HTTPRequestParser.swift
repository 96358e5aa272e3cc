import HTTPTypes

/// Incremental, zero-copy HTTP/1.x request parser (RFC 9112, strict).
///
/// Event loop contract — call `parse` until it returns a nil event:
///
///     var offset = 0
///     while true {
///         let (consumed, event) = try parser.parse(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
///         let sliceStart = offset
///         offset += consumed
///         guard let event else { break }      // all input consumed (or parser stopped, see isUpgraded)
///         // .body(range): bytes buffer[sliceStart + range.lowerBound ..< sliceStart + range.upperBound]
///     }
///
/// A nil event means all of `input` was consumed, except when `isUpgraded` is true (then nothing is consumed
/// and the remaining bytes belong to the tunnel / new protocol). `.end` is often delivered by a call that
/// consumes 0 bytes (e.g. right after the head of a GET), so looping only `while offset < count` would miss it.
///
/// - Body ranges point into the buffer passed to that call; a chunk or Content-Length body that spans reads
///   arrives as one `.body` per read. Body bytes are never copied or buffered by the parser.
/// - Only partial heads, chunk-size lines and trailer sections are buffered (bounded by `limits`).
/// - After `.end` the parser is ready for the next pipelined request. A CONNECT request gets its `.end` and
///   then the parser stops (`isUpgraded`, nothing more is consumed: the rest is tunnel data); call `resume()`
///   if the tunnel was refused and the connection stays HTTP. A request with `upgrade` set does NOT stop the
///   parser (a client sends nothing after it until it has the 101, e.g. RFC 6455 §4.1): a caller that
///   relays the upgrade stops feeding the parser when the 101 arrives.
/// - After a thrown error the parser is in an unspecified state: answer the error and close the connection.
public struct HTTPRequestParser: Sendable {
    enum State: Sendable {
        /// Between messages: skipping up to two empty lines, or accumulating a head.
        case head
        case body(BodyDecoder)
        /// The message (head, no body) is complete; `.end` is delivered next.
        case endPending
        /// Stopped after a CONNECT request.
        case upgraded
    }

    public let limits: HTTPParserLimits
    var state: State = .head
    var accumulator = SectionAccumulator()
    var leadingEmptyLines = 0
    var pendingLeadingCR = false
    /// The current message is a CONNECT: the parser stops after its end.
    var upgradeAfterEnd = false

    /// At most this many empty lines are skipped before a request line (RFC 9112 §2.2).
    static let maxLeadingEmptyLines = 2

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// True when no partial message is buffered and no message is in progress.
    public var isIdle: Bool {
        if case .head = state { return accumulator.isEmpty && !pendingLeadingCR }
        return false
    }

    /// Bytes of a partial head currently buffered (for timeouts / diagnostics).
    public var bufferedHeadBytes: Int {
        if case .head = state { return accumulator.buffer.count }
        return 0
    }

    /// True after the `.end` of a CONNECT request: the parser consumes nothing more until `resume()`.
    public var isUpgraded: Bool {
        if case .upgraded = state { return true }
        return false
    }

    /// Resume HTTP parsing after a CONNECT request whose tunnel was refused while the connection is kept.
    public mutating func resume() {
        if case .upgraded = state { state = .head }
    }

    /// The peer closed. Throws `.unexpectedEndOfStream` when a message is partially received
    /// (a partial head, or a body in progress); requests are never close-delimited.
    public mutating func finish() throws(HTTPParseError) {
        switch state {
        case .head:
            if !accumulator.isEmpty || pendingLeadingCR { throw .unexpectedEndOfStream }
        case .body(let decoder):
            if !decoder.isComplete { throw .unexpectedEndOfStream }
        case .endPending, .upgraded:
            break
        }
    }

    /// Parses at most ONE event from `input`. Returns the number of bytes consumed and the event, or a nil
    /// event when all of `input` was consumed (buffered internally only while inside a head, a chunk line
    /// or trailers) and more is needed.
    public mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<RequestHead>?) {
        let bytes = Bytes(input)
        switch state {
        case .head:
            return try parseHead(bytes)
        case .body(var decoder):
            // Avoid holding two references to the decoder's buffers while it mutates.
            state = .endPending
            let result: (Int, BodyDecoder.Event?)
            do {
                result = try decoder.decode(bytes, from: 0, limits: limits)
            } catch {
                state = .body(decoder)
                throw error
            }
            switch result.1 {
            case .body(let r):
                state = .body(decoder)
                return (result.0, .body(r))
            case .end(let trailers):
                finishMessage()
                return (result.0, .end(trailers: trailers))
            case nil:
                state = .body(decoder)
                return (result.0, nil)
            }
        case .endPending:
            finishMessage()
            return (0, .end(trailers: nil))
        case .upgraded:
            return (0, nil)
        }
    }

    private mutating func finishMessage() {
        state = upgradeAfterEnd ? .upgraded : .head
        upgradeAfterEnd = false
    }

    private mutating func parseHead(_ input: Bytes) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<RequestHead>?) {
        let n = input.count
        var pos = 0
        if accumulator.isEmpty {
            // Skip a few empty lines before the request line.
            while pos < n {
                let b = input[pos]
                if pendingLeadingCR {
                    guard b == ASCII.lf else { throw .bareCarriageReturn }
                    pendingLeadingCR = false
                    leadingEmptyLines += 1
                    if leadingEmptyLines > Self.maxLeadingEmptyLines { throw .invalidRequestLine }
                    pos += 1
                } else if b == ASCII.lf {
                    leadingEmptyLines += 1
                    if leadingEmptyLines > Self.maxLeadingEmptyLines { throw .invalidRequestLine }
                    pos += 1
                } else if b == ASCII.cr {
                    pendingLeadingCR = true
                    pos += 1
                } else {
                    break
                }
            }
            if pos == n { return (n, nil) }
        }
        let config = SectionAccumulator.Config(
            hasStartLine: true, maxBytes: limits.maxHeaderBytes, maxFirstLine: limits.maxRequestLineBytes,
            maxFieldLines: limits.maxHeaderCount, sizeError: .headerSectionTooLarge,
            emptyStartLineError: .invalidRequestLine)
        guard let (end, lines) = try accumulator.scan(input, from: pos, config) else {
            return (n, nil)
        }
        let head: RequestHead
        if accumulator.buffer.isEmpty {
            head = try Self.parseRequestHead(Bytes(base: input.base.map { $0 + pos }, count: end - pos), lines: lines)
        } else {
            accumulator.buffer.append(contentsOf: input.raw(pos, end))
            head = try withBytes(accumulator.buffer) { (b) throws(HTTPParseError) -> RequestHead in
                try Self.parseRequestHead(b, lines: lines)
            }
        }
        accumulator.reset()
        leadingEmptyLines = 0
        upgradeAfterEnd = head.method == .connect
        switch head.framing {
        case .none, .contentLength(0):
            state = .endPending
        default:
            state = .body(BodyDecoder(framing: head.framing))
        }
        return (end, .head(consume head))
    }

    /// Parses a complete head `h` (request line through the final empty line).
    static func parseRequestHead(_ h: Bytes, lines: Int) throws(HTTPParseError) -> RequestHead {
        let (lineEnd, next) = FieldParsing.line(h, at: 0)
        // request-line = method SP request-target SP HTTP-version
        if h.find(ASCII.cr, from: 0, to: lineEnd) != nil { throw .bareCarriageReturn }
        guard let sp1 = h.find(ASCII.sp, from: 0, to: lineEnd), sp1 > 0,
            let sp2 = h.findLast(ASCII.sp, from: sp1 + 1, to: lineEnd)
        else { throw .invalidRequestLine }
        guard let (major, minor) = FieldParsing.parseVersion(h, sp2 + 1, lineEnd) else { throw .invalidRequestLine }
        guard major == 1 && (minor == 0 || minor == 1) else { throw .unsupportedVersion }
        let version = HTTPVersion(major: 1, minor: minor)
        guard h.all(CharClass.token, from: 0, to: sp1) else { throw .invalidRequestLine }
        let ts = sp1 + 1
        let te = sp2
        guard te > ts, h.all(CharClass.target, from: ts, to: te) else { throw .invalidRequestLine }
        // Raw bytes >= 0x80 (UTF-8 some clients send unencoded) keep the line unambiguous: they are
        // neither whitespace nor control bytes. Accepted as valid UTF-8 only, so the target is forwarded
        // byte for byte (a String cannot hold other byte sequences unchanged).
        if !h.isASCII(ts, te) && !h.isValidUTF8(ts, te) { throw .invalidRequestLine }
        let method = makeMethod(h, 0, sp1)
        let target = try RequestTargetParsing.parse(
            h, ts, te, isConnect: method == .connect, isOptions: method == .options)
        let rawTarget = h.string(ts, te)

        var facts = FieldFacts()
        let fields = try FieldParsing.parseFields(h, from: next, expectedCount: lines - 1, facts: &facts, collectFacts: true)

        if minor == 1 && facts.hostCount != 1 { throw .missingHost }
        if facts.hostCount > 1 { throw .missingHost }

        // RFC 9112 §6.1 / §6.3
        if facts.hasTransferEncoding && facts.contentLength != nil { throw .conflictingFraming }
        var framing: BodyFraming
        if facts.hasTransferEncoding {
            if minor == 0 { throw .unsupportedTransferCoding }
            guard FieldParsing.transferEncodingIsValidChunked(facts) else { throw .unsupportedTransferCoding }
            framing = .chunked
        } else if let cl = facts.contentLength {
            framing = .contentLength(cl)
        } else {
            framing = .none
        }
        if method == .connect { framing = .none }  // CONNECT has no content (RFC 9110 §9.3.6)

        let keepAlive: Bool
        if minor == 1 {
            keepAlive = !facts.connectionClose
        } else {
            keepAlive = facts.connectionKeepAlive && !facts.connectionClose
        }
        // Upgrade is ignored on HTTP/1.0 requests (RFC 9110 §7.8) and meaningless on CONNECT.
        let upgrade = (facts.connectionUpgrade && method != .connect && minor == 1) ? facts.upgrade : nil
        var head = RequestHead(
            method: method, rawTarget: rawTarget, target: target, version: version, headerFields: fields,
            framing: framing, keepAlive: keepAlive, expectsContinue: facts.expectContinue && minor == 1,
            upgrade: upgrade, headLength: h.count)
        head.contentLengthIsList = facts.contentLengthIsList
        return head
    }

    @inline(__always)
    static func makeMethod(_ h: Bytes, _ s: Int, _ e: Int) -> HTTPRequest.Method {
        let len = e - s
        if len == 3 && h[s] == 0x47 && h[s + 1] == 0x45 && h[s + 2] == 0x54 { return .get }
        if len == 4 && h.equalsExact(s, e, "POST") { return .post }
        if len == 4 && h.equalsExact(s, e, "HEAD") { return .head }
        if len == 3 && h.equalsExact(s, e, "PUT") { return .put }
        if len == 7 && h.equalsExact(s, e, "CONNECT") { return .connect }
        if len == 7 && h.equalsExact(s, e, "OPTIONS") { return .options }
        if len == 6 && h.equalsExact(s, e, "DELETE") { return .delete }
        // Validated as a token by the caller.
        return HTTPRequest.Method(h.string(s, e))!
    }
}

