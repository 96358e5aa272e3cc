import LookoutHTTP

/// HTTP/1.1 requests (RFC 9112) fed in pieces, chunked bodies and trailers included: every event
/// keeps the parser's contract (consumption within the input, body slices ending where
/// consumption ends), and parsing always ends.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (_, chunks) = pieces(data, size)
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 8192, maxHeaderCount: 64))
    for chunk in chunks {
        guard feed(&parser, Array(chunk), stop: { $0.method == .connect }) else { return 0 }
    }
    do { try parser.finish() } catch { _ = error }
    return 0
}
