import LookoutHTTP

/// HTTP/1.1 requests (RFC 9112) fed in pieces, chunked bodies and trailers included: every event
/// keeps the parser's contract (consumption within the input, body slices ending where
/// consumption ends), and parsing always ends.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (_, chunks) = pieces(data, size)
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 8192, maxHeaderCount: 64))
    for chunk in chunks {
        guard feedRequest(&parser, Array(chunk)) else { return 0 }
    }
    do { try parser.finish() } catch { _ = error }
    return 0
}

/// One read's bytes; false when parsing stopped (an error, or a tunnel follows).
func feedRequest(_ parser: inout HTTPRequestParser, _ chunk: [UInt8]) -> Bool {
    chunk.withUnsafeBytes { buffer in
        var offset = 0
        var steps = 0
        while offset <= buffer.count {
            steps += 1
            require(steps < 1_000_000, "the parser loop does not end")
            let slice = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            let result: (consumed: Int, event: HTTPParseEvent<RequestHead>?)
            do { result = try parser.parse(slice) } catch { _ = error; return false }
            require(result.consumed >= 0 && result.consumed <= slice.count, "consumed \(result.consumed) of \(slice.count)")
            offset += result.consumed
            guard let event = result.event else { return true }
            switch event {
            case .body(let range):
                require(!range.isEmpty && range.lowerBound >= 0 && range.upperBound == result.consumed,
                        "body slice \(range) for \(result.consumed) consumed")
            case .head(let head):
                if head.method == .connect { return false }  // a tunnel follows
            case .end:
                break
            }
        }
        return true
    }
}
