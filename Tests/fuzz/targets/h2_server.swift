import HTTPTypes
import LookoutHTTP2

/// HTTP/2 frames from a client into the server session (nghttp2 plus Lookout's limits and
/// bookkeeping), and every request translated to HTTP/1.1 as the proxy would. With the first
/// byte's high bit, the session is one taken over by `Upgrade: h2c`: stream 1 already open and
/// the message checks made by `HTTP2RequestValidation` instead of nghttp2.
final class Collector: HTTP2ServerSessionDelegate {
    func http2Session(_ session: HTTP2ServerSession, didReceiveRequest headers: [HTTP2Header], stream: Int32,
                      endStream: Bool, fieldBytes: Int) {
        _ = HTTP2MessageTranslation.requestHead(headers, endStream: endStream, fieldBytes: fieldBytes)
    }
    func http2Session(_ session: HTTP2ServerSession, didReceiveOversizedRequest stream: Int32, fieldBytes: Int) {}
    func http2Session(_ session: HTTP2ServerSession, didReceiveData bytes: UnsafeRawBufferPointer, stream: Int32) {
        session.consume(stream: stream, count: bytes.count)
    }
    func http2Session(_ session: HTTP2ServerSession, didFinishRequest stream: Int32, trailers: [HTTP2Header]?) {}
    func http2Session(_ session: HTTP2ServerSession, didRejectMalformed stream: Int32, reason: String) {}
    func http2Session(_ session: HTTP2ServerSession, didCloseStream stream: Int32, code: HTTP2ErrorCode, byPeer: Bool) {}
    func http2Session(_ session: HTTP2ServerSession, canSendMoreOn stream: Int32) {}
    func http2Session(_ session: HTTP2ServerSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32) {}
    func http2Session(_ session: HTTP2ServerSession, didEndWith code: HTTP2ErrorCode, reason: String) {}
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2Server(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (_, chunks) = pieces(data, size)
    let collector = Collector()
    var settings = HTTP2ServerSettings()
    let upgraded = size > 0 && data![0] & 0x80 != 0
    settings.acceptsAbsolutePaths = upgraded
    guard let session = try? HTTP2ServerSession(settings: settings) else { return 0 }
    session.delegate = collector
    if upgraded { require((try? session.upgrade(settingsPayload: [0, 3, 0, 0, 0, 100], headRequest: false)) != nil, "upgrade") }
    let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    for chunk in [preface[...]] + chunks {
        let ok: Bool = Array(chunk).withUnsafeBytes { bytes in (try? session.receive(bytes)) != nil }
        let wrote = (try? session.writeOutput { _ in true }) != nil
        if !ok || !wrote { break }
    }
    withExtendedLifetime(collector) {}
    return 0
}
