import HTTPTypes
import LookoutHTTP

/// HTTP/1.1 responses fed in pieces to a parser expecting answers to GET, HEAD, CONNECT or POST
/// (picked by the first byte), then the connection closing: length, chunked, close-delimited and
/// transfer-coded framing, trailers, 1xx.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPResponse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, chunks) = pieces(data, size)
    var parser = HTTPResponseParser(limits: HTTPParserLimits(maxHeaderBytes: 8192, maxHeaderCount: 64))
    let methods: [HTTPRequest.Method] = [.get, .head, .connect, .post]
    let pick = Int(all.first ?? 0)
    for i in 0..<3 { parser.expectResponse(to: methods[(pick >> (i * 2)) & 3]) }
    for chunk in chunks {
        guard feed(&parser, Array(chunk)) else { return 0 }
    }
    do { _ = try parser.finish() } catch { _ = error }
    return 0
}
