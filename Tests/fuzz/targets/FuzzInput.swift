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
