import HTTPTypes
import LookoutHTTP
import LookoutHTTP2

/// An HTTP/2 origin's frames into the client session after one request (nghttp2 plus Lookout's
/// bookkeeping), and each response and trailer section translated for an HTTP/1.1 client and
/// serialized as the proxy would (RFC 9113 §8.3.2 to RFC 9112): the h2 → h1 direction.
final class ResponseCollector: HTTP2ClientSessionDelegate {
    var method: HTTPRequest.Method = .get
    func http2Session(_ session: HTTP2ClientSession, didReceiveResponse headers: [HTTP2Header], stream: Int32,
                      endStream: Bool, fieldBytes: Int) {
        guard let head = HTTP2MessageTranslation.responseHead(headers, endStream: endStream, fieldBytes: fieldBytes,
                                                              requestMethod: method) else { return }
        let bytes = HTTPSerializer.responseHead(status: head.status, reasonPhrase: head.reasonPhrase, version: .http1_1,
                                                headerFields: head.headerFields)
        require(bytes.starts(with: Array("HTTP/1.1 ".utf8)), "a serialized head starts with its status line")
    }
    func http2Session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, stream: Int32) {
        session.consume(stream: stream, count: bytes.count)
    }
    func http2Session(_ session: HTTP2ClientSession, didFinishResponse stream: Int32, trailers: [HTTP2Header]?) {
        if let trailers { _ = HTTPSerializer.lastChunk(trailers: HTTP2MessageTranslation.fields(trailers)) }
    }
    func http2Session(_ session: HTTP2ClientSession, didCloseStream stream: Int32, code: HTTP2ErrorCode,
                      problem: HTTP2StreamProblem?) {}
    func http2Session(_ session: HTTP2ClientSession, canSendMoreOn stream: Int32) {}
    func http2Session(_ session: HTTP2ClientSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32,
                      debugData: String) {}
    func http2SessionDidReceiveSettings(_ session: HTTP2ClientSession) {}
    func http2SessionDidReceivePingAck(_ session: HTTP2ClientSession) {}
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2Client(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (_, chunks) = pieces(data, size)
    let collector = ResponseCollector()
    guard let session = try? HTTP2ClientSession(settings: HTTP2ClientSettings()) else { return 0 }
    session.delegate = collector
    var fields = HTTPFields()
    fields[.accept] = "*/*"
    fields[.te] = "trailers"
    // Two requests, so stream 1 and 3 both exist for the origin's frames to name.
    for method in ["GET", "HEAD"] {
        _ = try? session.submitRequest(method: method, scheme: "https", authority: "a.example", path: "/x", fields: fields,
                                       acceptsTrailers: true, hasBody: false)
    }
    _ = try? session.writeOutput { _ in true }
    for chunk in chunks {
        let ok: Bool = Array(chunk).withUnsafeBytes { bytes in (try? session.receive(bytes)) != nil }
        let wrote = (try? session.writeOutput { _ in true }) != nil
        if !ok || !wrote { break }
    }
    withExtendedLifetime(collector) {}
    return 0
}
