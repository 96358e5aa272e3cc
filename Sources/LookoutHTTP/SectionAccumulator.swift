/// Finds the end of a head or trailer section (the first empty line) across reads, enforcing the
/// size limits as bytes arrive. Bytes of an incomplete section are buffered; when a section is
/// complete and nothing was buffered, the caller parses it straight from the input (no copy).
struct SectionAccumulator: Sendable {
    /// Bytes of the partial section seen in earlier reads.
    var buffer: [UInt8] = []
    /// Offset (within the section) where the current line starts.
    var lineStart = 0
    /// Completed non-terminal lines so far (start line included).
    var lineCount = 0

    struct Config {
        /// True for heads (first line is the start line), false for trailers.
        var hasStartLine: Bool
        var maxBytes: Int
        /// Limit on the first line's content (request line), or nil.
        var maxFirstLine: Int?
        var maxFieldLines: Int
        var sizeError: HTTPParseError
        /// Thrown when the very first line of a head is empty.
        var emptyStartLineError: HTTPParseError
    }

    var isEmpty: Bool { buffer.isEmpty && lineStart == 0 && lineCount == 0 }

    mutating func reset() {
        if buffer.capacity > 4096 {
            buffer = []
        } else {
            buffer.removeAll(keepingCapacity: true)
        }
        lineStart = 0
        lineCount = 0
    }

    /// Scans `input[start...]`. Returns the offset in `input` just past the section's final LF when the
    /// section completes there (the bytes `input[start..<end]` are NOT appended), or nil when all of
    /// `input[start...]` was buffered and more is needed.
    mutating func scan(_ input: Bytes, from start: Int, _ config: Config) throws(HTTPParseError) -> (end: Int, lines: Int)? {
        let n = input.count
        // Absolute section offset of input[i] is base + i.
        let base = buffer.count - start
        var i = start
        while i < n, let lf = input.find(ASCII.lf, from: i, to: n) {
            let absLF = base + lf
            let len = absLF - lineStart
            let empty = len == 0 || (len == 1 && byte(at: lineStart, input, base) == ASCII.cr)
            if empty {
                if lineCount > 0 || !config.hasStartLine {
                    if absLF + 1 > config.maxBytes { throw config.sizeError }
                    let lines = lineCount
                    return (lf + 1, lines)
                }
                throw config.emptyStartLineError
            }
            if lineCount == 0, let maxFirst = config.maxFirstLine {
                let content = len - (byte(at: absLF - 1, input, base) == ASCII.cr ? 1 : 0)
                if content > maxFirst { throw .requestLineTooLong }
            }
            lineCount += 1
            if lineCount - (config.hasStartLine ? 1 : 0) > config.maxFieldLines { throw .tooManyHeaders }
            lineStart = absLF + 1
            if lineStart > config.maxBytes { throw config.sizeError }
            i = lf + 1
        }
        // Incomplete: enforce limits on what we have, then buffer it.
        let total = base + n
        if lineCount == 0, let maxFirst = config.maxFirstLine, total > lineStart {
            let content = total - lineStart - (byte(at: total - 1, input, base) == ASCII.cr ? 1 : 0)
            if content > maxFirst { throw .requestLineTooLong }
        }
        if total > config.maxBytes { throw config.sizeError }
        if n > start {
            buffer.append(contentsOf: input.raw(start, n))
        }
        return nil
    }

    @inline(__always)
    private func byte(at abs: Int, _ input: Bytes, _ base: Int) -> UInt8 {
        abs < buffer.count ? buffer[abs] : input[abs - base]
    }
}
