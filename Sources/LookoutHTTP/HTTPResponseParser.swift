import HTTPTypes

/// Incremental, zero-copy HTTP/1.x response parser (RFC 9112, strict). Same calling contract as
/// `HTTPRequestParser` (loop until the event is nil).
///
/// - `expectResponse(to:)` queues the method of a request sent on this connection; each final
///   (non-1xx) response consumes one queued method (GET is assumed when none is queued).
/// - 1xx heads other than 101 are delivered as `.head` with no `.end`; the final response follows.
/// - After a 101 head, or a 2xx head answering CONNECT, the parser stops (no `.end`, `isUpgraded` is true)
///   and consumes nothing more: the remaining bytes belong to the tunnel.
public struct HTTPResponseParser: Sendable {
    enum State: Sendable {
        case head
        case body(BodyDecoder)
        case endPending
        case upgraded
    }

    public let limits: HTTPParserLimits
    var state: State = .head
    var accumulator = SectionAccumulator()
    /// The methods of the requests still to be answered, oldest first: the oldest inline, the
    /// rest (pipelined requests, rare) in an array, so the usual one-at-a-time exchange
    /// allocates nothing here.
    var oldestPendingMethod: HTTPRequest.Method?
    var laterPendingMethods: [HTTPRequest.Method] = []
    /// An interim (1xx) response was received; the final one is still to come.
    var awaitingFinal = false
    /// The previous response's fields on the connection, for the next response's repeated lines.
    var recall = FieldRecall()

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// Trades remembered fields with the connection: a new task's parser takes what the previous
    /// one remembered, and hands its own back when the connection returns to the pool. Swapped,
    /// never copied, so the one array stays uniquely owned and is updated in place.
    public mutating func swapFieldRecall(with recall: inout FieldRecall) {
        swap(&self.recall, &recall)
    }

    /// Must be called before each response with the method of the request it answers.
    /// Calls queue up (for pipelined requests); each final response consumes one.
    public mutating func expectResponse(to method: HTTPRequest.Method) {
        if oldestPendingMethod == nil {
            oldestPendingMethod = method
        } else {
            laterPendingMethods.append(method)
        }
    }

    private mutating func answeredOldestPending() {
        oldestPendingMethod = laterPendingMethods.isEmpty ? nil : laterPendingMethods.removeFirst()
    }

    /// True when no partial message is buffered and no message is in progress.
    public var isIdle: Bool {
        if case .head = state { return accumulator.isEmpty && !awaitingFinal }
        return false
    }

    /// Bytes of a partial head currently buffered.
    public var bufferedHeadBytes: Int {
        if case .head = state { return accumulator.buffer.count }
        return 0
    }

    /// True after a 101 head or a 2xx head answering CONNECT: the parser consumes nothing more.
    public var isUpgraded: Bool {
        if case .upgraded = state { return true }
        return false
    }

    /// The peer closed. Returns `.end(trailers: nil)` when the body is close-delimited (or when a head-only
    /// message's `.end` had not been delivered yet), nil when idle (or upgraded), throws
    /// `.unexpectedEndOfStream` when mid-head/mid-body.
    public mutating func finish() throws(HTTPParseError) -> HTTPParseEvent<ResponseHead>? {
        switch state {
        case .head:
            if !accumulator.isEmpty || awaitingFinal { throw .unexpectedEndOfStream }
            return nil
        case .body(let decoder):
            if case .untilClose = decoder.state {
                state = .head
                return .end(trailers: nil)
            }
            if decoder.isComplete {
                // The whole body was delivered but the caller had not asked for `.end` yet.
                state = .head
                return .end(trailers: nil)
            }
            throw .unexpectedEndOfStream
        case .endPending:
            state = .head
            return .end(trailers: nil)
        case .upgraded:
            return nil
        }
    }

    public mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<ResponseHead>?) {
        let bytes = Bytes(input)
        switch state {
        case .head:
            return try parseHead(bytes)
        case .body(var decoder):
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
                state = .head
                return (result.0, .end(trailers: trailers))
            case nil:
                state = .body(decoder)
                return (result.0, nil)
            }
        case .endPending:
            state = .head
            return (0, .end(trailers: nil))
        case .upgraded:
            return (0, nil)
        }
    }

    private mutating func parseHead(_ input: Bytes) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<ResponseHead>?) {
        let n = input.count
        if n == 0 { return (0, nil) }
        let config = SectionAccumulator.Config(
            hasStartLine: true, maxBytes: limits.maxHeaderBytes, maxFirstLine: nil,
            maxFieldLines: limits.maxHeaderCount, sizeError: .headerSectionTooLarge,
            emptyStartLineError: .invalidStatusLine)
        guard let (end, lines) = try accumulator.scan(input, from: 0, config) else {
            return (n, nil)
        }
        let method = oldestPendingMethod ?? .get
        let head: ResponseHead
        if accumulator.buffer.isEmpty {
            head = try Self.parseResponseHead(Bytes(base: input.base, count: end), lines: lines, method: method,
                                              recall: &recall)
        } else {
            accumulator.buffer.append(contentsOf: input.raw(0, end))
            // Moved out and back, not copied: a second owner would make the update copy the array.
            var recall = FieldRecall(enabled: false)
            swap(&recall, &self.recall)
            defer { swap(&recall, &self.recall) }
            head = try withBytes(accumulator.buffer) { (b) throws(HTTPParseError) -> ResponseHead in
                try Self.parseResponseHead(b, lines: lines, method: method, recall: &recall)
            }
        }
        accumulator.reset()
        if head.status == 101 {
            answeredOldestPending()
            awaitingFinal = false
            state = .upgraded
        } else if head.status < 200 {
            awaitingFinal = true
            state = .head
        } else {
            answeredOldestPending()
            awaitingFinal = false
            if method == .connect && head.status < 300 {
                state = .upgraded
            } else {
                switch head.framing {
                case .none, .contentLength(0): state = .endPending
                default: state = .body(BodyDecoder(framing: head.framing))
                }
            }
        }
        return (end, .head(head))
    }

    static func parseResponseHead(
        _ h: Bytes, lines: Int, method: HTTPRequest.Method, recall: inout FieldRecall
    ) throws(HTTPParseError) -> ResponseHead {
        let (lineEnd, next) = FieldParsing.line(h, at: 0)
        // status-line = HTTP-version SP status-code SP [ reason-phrase ]
        if h.find(ASCII.cr, from: 0, to: lineEnd) != nil { throw .bareCarriageReturn }
        guard lineEnd >= 12, let (major, minor) = FieldParsing.parseVersion(h, 0, 8), h[8] == ASCII.sp else {
            throw .invalidStatusLine
        }
        guard major == 1 && (minor == 0 || minor == 1) else { throw .unsupportedVersion }
        let version = HTTPVersion(major: 1, minor: minor)
        var status = 0
        for k in 9..<12 {
            let d = h[k]
            guard d >= 0x30 && d <= 0x39 else { throw .invalidStatusLine }
            status = status * 10 + Int(d - 0x30)
        }
        guard status >= 100 else { throw .invalidStatusLine }
        var reason = ""
        if lineEnd > 12 {
            guard h[12] == ASCII.sp else { throw .invalidStatusLine }
            // reason-phrase = 1*( HTAB / SP / VCHAR / obs-text )
            guard h.all(CharClass.fieldValue, from: 13, to: lineEnd) else { throw .invalidStatusLine }
            reason = h.string(13, lineEnd)
        }

        var facts = FieldFacts()
        let fields = try FieldParsing.parseFields(h, from: next, expectedCount: lines - 1, facts: &facts,
                                                  collectFacts: true, recall: &recall)

        // RFC 9112 §6.3
        if facts.hasTransferEncoding && facts.contentLength != nil { throw .conflictingFraming }
        let framing: BodyFraming
        let isTunnel = status == 101 || (method == .connect && status >= 200 && status < 300)
        if method == .head || status < 200 || status == 204 || status == 304 || isTunnel {
            framing = .none
        } else if facts.hasTransferEncoding {
            // §6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
            if minor == 0 { throw .unsupportedTransferCoding }
            if FieldParsing.transferEncodingIsValidChunked(facts) {
                framing = .chunked
            } else if !facts.chunkedIsFinal {
                // §6.3 rule 4: with chunked not the final coding, a response's body runs until
                // the server closes; it is relayed as it is, codings and all.
                framing = .untilClose
            } else {
                // chunked applied twice (§6.1 forbids it), or after a coding Lookout does not know.
                throw .unsupportedTransferCoding
            }
        } else if let cl = facts.contentLength {
            framing = .contentLength(cl)
        } else {
            framing = .untilClose
        }

        var keepAlive: Bool
        if minor == 1 {
            keepAlive = !facts.connectionClose
        } else {
            keepAlive = facts.connectionKeepAlive && !facts.connectionClose
        }
        if framing == .untilClose || isTunnel { keepAlive = false }
        var head = ResponseHead(
            status: status, reasonPhrase: reason, version: version, headerFields: fields, framing: framing,
            keepAlive: keepAlive, headLength: h.count)
        head.contentLengthIsList = facts.contentLengthIsList
        return head
    }
}
