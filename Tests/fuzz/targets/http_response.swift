import HTTPTypes
import LookoutHTTP

/// HTTP/1.1 responses fed in pieces to a parser expecting answers to GET, HEAD, CONNECT or POST
/// (picked by the first byte), then the connection closing: length, chunked, close-delimited and
/// transfer-coded framing, trailers, 1xx. The same pieces then go to two more parsers, one of
/// which forgets the previous response's fields before every call: a field taken from the
/// remembered ones (`FieldRecall`) must give exactly what parsing the line gives.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPResponse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, chunks) = pieces(data, size)
    let pick = Int(all.first ?? 0)
    var parser = responseParser(pick)
    var fed = true
    for chunk in chunks where fed {
        fed = feed(&parser, Array(chunk))
    }
    if fed {
        do { _ = try parser.finish() } catch { _ = error }
    }
    let remembering = events(chunks, pick: pick, forgetting: false)
    let forgetting = events(chunks, pick: pick, forgetting: true)
    require(remembering == forgetting, "with the fields remembered: \(remembering)\nwithout: \(forgetting)")
    return 0
}

private func responseParser(_ pick: Int) -> HTTPResponseParser {
    var parser = HTTPResponseParser(limits: HTTPParserLimits(maxHeaderBytes: 8192, maxHeaderCount: 64))
    let methods: [HTTPRequest.Method] = [.get, .head, .connect, .post]
    for i in 0..<3 { parser.expectResponse(to: methods[(pick >> (i * 2)) & 3]) }
    return parser
}

/// Everything a parser reports for the pieces, as text: each head with its fields exactly as
/// parsed (name spelling, value bytes), body bytes, ends with their trailers, the error.
private func events(_ chunks: [ArraySlice<UInt8>], pick: Int, forgetting: Bool) -> [String] {
    var parser = responseParser(pick)
    var out: [String] = []
    var stopped = false
    for chunk in chunks where !stopped {
        Array(chunk).withUnsafeBytes { buffer in
            var offset = 0
            while offset <= buffer.count {
                if forgetting {
                    var none = FieldRecall()
                    parser.swapFieldRecall(with: &none)
                }
                let slice = UnsafeRawBufferPointer(rebasing: buffer[offset...])
                let result: (consumed: Int, event: HTTPParseEvent<ResponseHead>?)
                do { result = try parser.parse(slice) } catch {
                    out.append("error \(error)")
                    stopped = true
                    return
                }
                offset += result.consumed
                guard let event = result.event else { return }
                switch event {
                case .head(let head): out.append(text(head))
                case .body(let range): out.append("body \(Array(slice[range]))")
                case .end(let trailers): out.append("end " + (trailers.map(text) ?? "-"))
                }
            }
        }
    }
    if !stopped {
        do { out.append("finish \(String(describing: try parser.finish()))") } catch { out.append("finish error \(error)") }
    }
    return out
}

private func text(_ head: ResponseHead) -> String {
    "\(head.status) \(head.reasonPhrase) \(head.version) \(head.framing) keep=\(head.keepAlive) "
        + "length=\(head.headLength) list=\(head.contentLengthIsList) " + text(head.headerFields)
}

private func text(_ fields: HTTPFields) -> String {
    fields.withFieldBuffer { buffer in
        buffer.map { field in "\(field.name.rawName): \(field.withUnsafeBytesOfValue { Array($0) })" }.joined(separator: " | ")
    }
}
