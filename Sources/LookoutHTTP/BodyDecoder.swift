import HTTPTypes

/// Decodes message bodies (Content-Length, chunked with trailers, close-delimited) without copying data.
struct BodyDecoder: Sendable {
    enum State: Sendable {
        case contentLength(remaining: UInt64)
        case chunkLine
        case chunkData(remaining: UInt64)
        case chunkDataCR
        case chunkDataLF
        case trailers
        case untilClose
    }

    enum Event {
        case body(Range<Int>)
        case end(HTTPFields?)
    }

    static let maxChunkSize: UInt64 = 1 << 62

    var state: State
    /// Partial chunk-size line from earlier reads.
    var lineBuffer: [UInt8] = []
    var trailerAccumulator = SectionAccumulator()

    init(framing: BodyFraming) {
        switch framing {
        case .contentLength(let n): state = .contentLength(remaining: n)
        case .chunked: state = .chunkLine
        case .untilClose: state = .untilClose
        case .none: state = .contentLength(remaining: 0)
        }
    }

    var bufferedBytes: Int { lineBuffer.count + trailerAccumulator.buffer.count }

    /// All body bytes were delivered and only `.end` remains (Content-Length reached).
    var isComplete: Bool {
        if case .contentLength(0) = state { return true }
        return false
    }

    /// Processes `input[pos...]`. Returns the new position and at most one event. When the event is nil,
    /// all of the input was consumed.
    mutating func decode(_ input: Bytes, from start: Int, limits: HTTPParserLimits) throws(HTTPParseError) -> (Int, Event?) {
        var pos = start
        let n = input.count
        while true {
            switch state {
            case .contentLength(let remaining):
                if remaining == 0 { return (pos, .end(nil)) }
                if pos == n { return (pos, nil) }
                let take = Int(min(remaining, UInt64(n - pos)))
                state = .contentLength(remaining: remaining - UInt64(take))
                return (pos + take, .body(pos..<(pos + take)))

            case .untilClose:
                if pos == n { return (pos, nil) }
                return (n, .body(pos..<n))

            case .chunkData(let remaining):
                if pos == n { return (pos, nil) }
                let take = Int(min(remaining, UInt64(n - pos)))
                let left = remaining - UInt64(take)
                state = left == 0 ? .chunkDataCR : .chunkData(remaining: left)
                return (pos + take, .body(pos..<(pos + take)))

            case .chunkDataCR:
                if pos == n { return (pos, nil) }
                guard input[pos] == ASCII.cr else { throw .invalidChunkedEncoding }
                pos += 1
                state = .chunkDataLF

            case .chunkDataLF:
                if pos == n { return (pos, nil) }
                guard input[pos] == ASCII.lf else { throw .invalidChunkedEncoding }
                pos += 1
                state = .chunkLine

            case .chunkLine:
                guard let next = try readChunkLine(input, from: pos, limits: limits) else { return (n, nil) }
                pos = next

            case .trailers:
                return try readTrailers(input, from: pos, limits: limits)
            }
        }
    }

    /// A chunk-size line (RFC 9112 §7.1): the position after it, the state set to the chunk's data
    /// or the trailers; nil when the line is not complete yet (what there is was kept).
    private mutating func readChunkLine(_ input: Bytes, from start: Int, limits: HTTPParserLimits) throws(HTTPParseError) -> Int? {
        var pos = start
        let n = input.count
        guard let lf = input.find(ASCII.lf, from: pos, to: n) else {
            // Incomplete line: bound it (one extra byte for a trailing CR), then buffer.
            let total = lineBuffer.count + (n - pos)
            if total > limits.maxChunkLineBytes + 1 { throw .invalidChunkedEncoding }
            if total == limits.maxChunkLineBytes + 1 && input[n - 1] != ASCII.cr { throw .invalidChunkedEncoding }
            lineBuffer.append(contentsOf: input.raw(pos, n))
            return nil
        }
        let size: UInt64
        if lineBuffer.isEmpty {
            size = try Self.parseChunkLine(input, pos, lf, limits: limits)
        } else {
            lineBuffer.append(contentsOf: input.raw(pos, lf))
            size = try withBytes(lineBuffer) { (b) throws(HTTPParseError) -> UInt64 in
                try Self.parseChunkLine(b, 0, b.count, limits: limits)
            }
            lineBuffer.removeAll(keepingCapacity: true)
        }
        pos = lf + 1
        state = size == 0 ? .trailers : .chunkData(remaining: size)
        return pos
    }

    /// The trailer section after the last chunk (RFC 9112 §7.1.2), then the end of the body; no
    /// event while it is not complete (what there is was kept).
    private mutating func readTrailers(_ input: Bytes, from pos: Int, limits: HTTPParserLimits) throws(HTTPParseError) -> (Int, Event?) {
        let config = SectionAccumulator.Config(
            hasStartLine: false, maxBytes: limits.maxTrailerBytes, maxFirstLine: nil,
            maxFieldLines: limits.maxHeaderCount, sizeError: .headerSectionTooLarge,
            emptyStartLineError: .invalidChunkedEncoding)
        guard let (end, lines) = try trailerAccumulator.scan(input, from: pos, config) else {
            return (input.count, nil)
        }
        let trailers: HTTPFields?
        if lines == 0 {
            trailers = nil
        } else {
            var facts = FieldFacts()
            if trailerAccumulator.buffer.isEmpty {
                let section = Bytes(base: input.base.map { $0 + pos }, count: end - pos)
                trailers = try FieldParsing.parseFields(section, from: 0, expectedCount: lines, facts: &facts, collectFacts: false)
            } else {
                trailerAccumulator.buffer.append(contentsOf: input.raw(pos, end))
                trailers = try withBytes(trailerAccumulator.buffer) { (b) throws(HTTPParseError) -> HTTPFields in
                    try FieldParsing.parseFields(b, from: 0, expectedCount: lines, facts: &facts, collectFacts: false)
                }
            }
        }
        trailerAccumulator.reset()
        state = .contentLength(remaining: 0)
        return (end, .end(trailers))
    }

    /// chunk-size [ chunk-ext ] CRLF, given the line without its LF: `h[s..<lfIndex]`.
    static func parseChunkLine(_ h: Bytes, _ s: Int, _ lfIndex: Int, limits: HTTPParserLimits) throws(HTTPParseError) -> UInt64 {
        // Strict CRLF.
        guard lfIndex > s, h[lfIndex - 1] == ASCII.cr else { throw .invalidChunkedEncoding }
        let e = lfIndex - 1
        if e - s > limits.maxChunkLineBytes { throw .invalidChunkedEncoding }
        var i = s
        var size: UInt64 = 0
        while i < e, let d = hexValue(h[i]) {
            guard size <= (maxChunkSize - d) / 16 else { throw .invalidChunkedEncoding }
            size = size * 16 + d
            i += 1
        }
        if i == s { throw .invalidChunkedEncoding }
        // chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
        while i < e {
            while i < e && isOWS(h[i]) { i += 1 }
            guard i < e, h[i] == ASCII.semicolon else { throw .invalidChunkedEncoding }
            i += 1
            while i < e && isOWS(h[i]) { i += 1 }
            let ns = i
            while i < e && charTable[Int(h[i])] & CharClass.token != 0 { i += 1 }
            if i == ns { throw .invalidChunkedEncoding }
            var j = i
            while j < e && isOWS(h[j]) { j += 1 }
            if j < e && h[j] == ASCII.equals {
                j += 1
                while j < e && isOWS(h[j]) { j += 1 }
                guard j < e else { throw .invalidChunkedEncoding }
                if h[j] == ASCII.quote {
                    j += 1
                    var closed = false
                    while j < e {
                        let b = h[j]
                        if b == ASCII.quote {
                            closed = true
                            j += 1
                            break
                        } else if b == ASCII.backslash {
                            guard j + 1 < e, charTable[Int(h[j + 1])] & CharClass.fieldValue != 0 else {
                                throw .invalidChunkedEncoding
                            }
                            j += 2
                        } else if charTable[Int(b)] & CharClass.qdtext != 0 {
                            j += 1
                        } else {
                            throw .invalidChunkedEncoding
                        }
                    }
                    if !closed { throw .invalidChunkedEncoding }
                } else {
                    let vs = j
                    while j < e && charTable[Int(h[j])] & CharClass.token != 0 { j += 1 }
                    if j == vs { throw .invalidChunkedEncoding }
                }
                i = j
            }
            // else: name without value; whitespace before a following ';' is handled at loop top.
            // Trailing whitespace after the last extension is rejected at the loop top (no ';').
        }
        return size
    }
}
