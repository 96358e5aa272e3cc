import LookoutHTTP

// Shared by every fuzz target (compiled into each binary with its target file).

/// The input split into the pieces a peer's reads would deliver: the first byte picks a piece
/// size (1–64, or all at once for 0), so incremental parsing is exercised at every boundary.
func pieces(_ data: UnsafePointer<UInt8>?, _ size: Int) -> (all: [UInt8], chunks: [ArraySlice<UInt8>]) {
    guard let data, size > 0 else { return ([], []) }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let step = bytes[0] % 65
    let body = bytes[1...]
    guard step > 0 else { return (Array(body), [body]) }
    var chunks: [ArraySlice<UInt8>] = []
    var start = body.startIndex
    while start < body.endIndex {
        let end = min(start + Int(step), body.endIndex)
        chunks.append(body[start..<end])
        start = end
    }
    return (Array(body), chunks)
}

/// A fuzz-found bug is a crash: an invariant that does not hold stops the run with its message.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("invariant: " + message()) }
}

/// The request and response parsers, as the shared feeding loop drives them.
protocol FuzzedParser {
    associatedtype Head: Sendable
    mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, event: HTTPParseEvent<Head>?)
}

extension HTTPRequestParser: FuzzedParser {}
extension HTTPResponseParser: FuzzedParser {}

/// One read's bytes through `parser`, checking the calling contract on every event: consumption
/// within the input, body slices ending where consumption ends, and an end to the loop. False
/// when parsing stopped (an error, or `stop` said a tunnel follows the head).
func feed<P: FuzzedParser>(_ parser: inout P, _ chunk: [UInt8], stop: (P.Head) -> Bool = { _ in false }) -> Bool {
    chunk.withUnsafeBytes { buffer in
        var offset = 0
        var steps = 0
        while offset <= buffer.count {
            steps += 1
            require(steps < 1_000_000, "the parser loop does not end")
            let slice = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            let result: (consumed: Int, event: HTTPParseEvent<P.Head>?)
            do { result = try parser.parse(slice) } catch { _ = error; return false }
            require(result.consumed >= 0 && result.consumed <= slice.count, "consumed \(result.consumed) of \(slice.count)")
            offset += result.consumed
            guard let event = result.event else { return true }
            switch event {
            case .body(let range):
                require(!range.isEmpty && range.lowerBound >= 0 && range.upperBound == result.consumed,
                        "body slice \(range) for \(result.consumed) consumed")
            case .head(let head):
                if stop(head) { return false }
            case .end:
                break
            }
        }
        return true
    }
}
