import HTTPTypes
import LookoutHTTP
import LookoutHTTP2
import LookoutIO
import LookoutModel
import LookoutUpstream

/// One stream of an intercepted HTTP/2 client connection: the exchange it carries, and the way
/// that exchange's response goes back — a HEADERS frame, DATA, trailers — through the
/// connection's nghttp2 session. The exchange sees an ordinary client; the stream translates.
final class HTTP2ClientStream: ExchangeDelegate, ClientResponseWriter, @unchecked Sendable {  // confined to the connection's loop queue
    let id: Int32
    /// The connection's HTTP/2 side, which owns this stream for as long as nghttp2 keeps it open.
    private unowned let side: HTTP2ClientSide
    private(set) var exchange: Exchange?
    /// Request body bytes passed to the exchange but not yet taken off the stream's window: the
    /// client may send more only once the exchange took them (RFC 9113 §5.2, flow control as
    /// backpressure).
    var unconsumedBytes = 0
    /// The client sent END_STREAM.
    var requestComplete = false
    private var headSent = false
    /// The response's end (END_STREAM, trailers, or a reset after the body) is queued.
    private(set) var responseEnded = false
    /// nghttp2 closed the stream: nothing more is written to it.
    private var isClosed = false

    init(id: Int32, side: HTTP2ClientSide) {
        self.id = id
        self.side = side
    }

    func run(_ exchange: Exchange) {
        self.exchange = exchange
        exchange.start()
    }

    // MARK: - ClientResponseWriter

    func writeInformational(status: Int, reasonPhrase: String, fields: HTTPFields) {
        guard !isClosed else { return }
        side.protocolSession.sendInformational(stream: id, status: status, headers: HTTP2MessageTranslation.headers(fields))
        side.scheduleFlush()
    }

    func writeHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming) {
        guard !isClosed else { return }
        headSent = true
        responseEnded = framing == .none
        side.protocolSession.sendResponse(stream: id, status: status, fields: fields, endStream: responseEnded)
        side.scheduleFlush()
    }

    @discardableResult
    func writeBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isClosed else { return true }
        side.scheduleFlush()
        return side.protocolSession.enqueueBody(stream: id, bytes)
    }

    func writeEnd(trailers: HTTPFields?) {
        guard headSent, !responseEnded, !isClosed else { return }
        responseEnded = true
        side.protocolSession.finishBody(stream: id, trailers: trailers.map(HTTP2MessageTranslation.headers))
        side.scheduleFlush()
    }

    func writeError(_ error: ProxyError, requestID: UInt64) {
        guard !headSent else { return }
        let response = ErrorResponse.parts(for: error, requestID: requestID)
        writeHead(status: response.status, reasonPhrase: "", fields: response.fields, framing: .contentLength)
        response.body.withUnsafeBytes { _ = writeBody($0) }
        writeEnd(trailers: nil)
    }

    /// HTTP/2 has no protocol switch (RFC 9113 §8.6): `Upgrade` never reaches an exchange here.
    var switchableStream: ByteStream? { nil }

    // MARK: - ExchangeDelegate

    func exchangeCanTakeInput() {
        guard unconsumedBytes > 0, !isClosed else { return }
        side.protocolSession.consume(stream: id, count: unconsumedBytes)
        unconsumedBytes = 0
        side.scheduleFlush()
    }

    func exchangeDidFinish(keepAlive: Bool) {
        exchange = nil
        guard !isClosed else {
            side.streamExchangeDidFinish(self)
            return
        }
        if !headSent {
            // Nothing was answered (the client went away, or a failure without a response).
            side.protocolSession.resetStream(id, code: .internalError, afterQueuedBody: false)
        } else {
            writeEnd(trailers: nil)
        }
        side.scheduleFlush()
    }

    func exchangeDidBreakOff() {
        exchange = nil
        guard !isClosed else {
            side.streamExchangeDidFinish(self)
            return
        }
        responseEnded = true
        // What was relayed still goes out, then the reset: the client sees a broken response.
        side.protocolSession.resetStream(id, code: .internalError, afterQueuedBody: true)
        side.scheduleFlush()
    }

    func exchangeDidSwitchProtocols(to tunnel: Tunnel) {
        preconditionFailure("an HTTP/2 stream never switches protocols")
    }

    func tunnelDidFinish(upstreamFailed: Bool) {}

    var isClosingAfterExchange: Bool { false }

    // MARK: - From the connection

    /// nghttp2 closed the stream after the whole response: nothing more is written, and the
    /// exchange finishes by itself.
    func streamClosedCleanly() {
        isClosed = true
    }

    /// The stream closed under the exchange (the client reset it, or the connection ended).
    func closed(_ error: ProxyError) {
        isClosed = true
        guard let exchange else { return }
        self.exchange = nil
        exchange.clientDidClose(error)
    }
}
