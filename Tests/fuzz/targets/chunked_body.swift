import LookoutHTTP

/// Chunked bodies with trailers (RFC 9112 §7.1) on their own: a fixed request head announcing
/// `Transfer-Encoding: chunked`, then the input as the body, in pieces — chunk sizes, extensions,
/// CRLF placement and trailer fields are the input's. The parser's contract is checked on every
/// event, and a body that ends has trailers that are valid fields.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunkedBody(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (_, chunks) = pieces(data, size)
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 8192, maxHeaderCount: 64))
    let head = Array("POST /upload HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
    guard feed(&parser, head) else { fatalError("invariant: the fixed head was refused") }
    for chunk in chunks {
        guard feed(&parser, Array(chunk)) else { return 0 }
    }
    do { try parser.finish() } catch { _ = error }
    return 0
}
