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
        guard feedResponse(&parser, Array(chunk)) else { return 0 }
    }
    do { _ = try parser.finish() } catch { _ = error }
    return 0
}

func feedResponse(_ parser: inout HTTPResponseParser, _ chunk: [UInt8]) -> Bool {
    chunk.withUnsafeBytes { buffer in
        var offset = 0
        var steps = 0
        while offset <= buffer.count {
            steps += 1
            require(steps < 1_000_000, "the parser loop does not end")
            let slice = UnsafeRawBufferPointer(rebasing: buffer[offset...])
            let result: (consumed: Int, event: HTTPParseEvent<ResponseHead>?)
            do { result = try parser.parse(slice) } catch { _ = error; return false }
            require(result.consumed >= 0 && result.consumed <= slice.count, "consumed \(result.consumed) of \(slice.count)")
            offset += result.consumed
            guard let event = result.event else { return true }
            if case .body(let range) = event {
                require(!range.isEmpty && range.upperBound == result.consumed, "body slice \(range) for \(result.consumed)")
            }
        }
        return true
    }
}
