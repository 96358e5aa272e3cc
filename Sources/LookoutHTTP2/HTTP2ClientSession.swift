import CLookoutNGHTTP2
import HTTPTypes
import LookoutHTTP

/// Limits and windows of the client side of an HTTP/2 connection (Lookout toward an origin).
public struct HTTP2ClientSettings: Sendable {
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a response whose fields add up to more (§6.5.2) fails.
    public var maxHeaderListBytes: Int = 65536
    /// How much response body a stream may send before Lookout has passed it on (§6.9.2): the
    /// most a slow client makes Lookout hold per stream.
    public var initialStreamWindow: Int32 = 256 * 1024
    /// The connection's receive window: bytes are taken off it as they arrive; the per-stream
    /// windows are the backpressure.
    public var connectionWindow: Int32 = 4 << 20
    /// Request body bytes queued per stream before `enqueueBody` asks the producer to wait.
    public var streamBufferBytes = 64 * 1024
    /// CONTINUATION frames allowed after one HEADERS.
    public var maxContinuations = 8
    /// Streams assumed allowed until the origin's SETTINGS says (RFC 9113 §6.5.2 recommends no
    /// fewer than 100).
    public var assumedMaxConcurrentStreams: UInt32 = 100

    public init() {}
}

/// What the client side of an HTTP/2 connection tells its owner. Every call happens on the
/// owner's queue, from inside `receive` or `writeOutput`; the owner may submit frames from them
/// but not call `receive` or `writeOutput`.
public protocol HTTP2ClientSessionDelegate: AnyObject {
    /// A response header section: an interim (1xx) or the final one (RFC 9113 §8.1), validated
    /// by nghttp2 (§8.1.1, §8.3.2). `endStream`: no body follows.
    func http2Session(_ session: HTTP2ClientSession, didReceiveResponse headers: [HTTP2Header], stream: Int32,
                      endStream: Bool, fieldBytes: Int)
    func http2Session(_ session: HTTP2ClientSession, didReceiveData bytes: UnsafeRawBufferPointer, stream: Int32)
    /// The response is complete (END_STREAM), with its trailer section if it had one.
    func http2Session(_ session: HTTP2ClientSession, didFinishResponse stream: Int32, trailers: [HTTP2Header]?)
    /// The stream is closed. `code` is NO_ERROR after a complete exchange; `problem` says why
    /// it ended otherwise (the origin reset it, nghttp2 refused a malformed response, the
    /// response's header list was too large, the connection ended).
    func http2Session(_ session: HTTP2ClientSession, didCloseStream stream: Int32, code: HTTP2ErrorCode,
                      problem: HTTP2StreamProblem?)
    /// The stream's queued request body fell below half of `streamBufferBytes`: send more.
    func http2Session(_ session: HTTP2ClientSession, canSendMoreOn stream: Int32)
    /// The origin is going away (GOAWAY, §6.8): streams above `lastStreamID` were not processed.
    func http2Session(_ session: HTTP2ClientSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32,
                      debugData: String)
    /// The origin's SETTINGS arrived (or changed): `maxConcurrentStreams` may have moved.
    func http2SessionDidReceiveSettings(_ session: HTTP2ClientSession)
    /// The origin answered a PING (§6.7).
    func http2SessionDidReceivePingAck(_ session: HTTP2ClientSession)
}

/// Why a stream closed without a complete exchange.
public enum HTTP2StreamProblem: Equatable, Sendable {
    /// RST_STREAM from the peer.
    case resetByPeer
    /// nghttp2 refused a frame of the response as malformed (§8.1.1) and reset the stream.
    case malformed(String)
    /// The response's header section was over `maxHeaderListBytes`; the stream was reset.
    case headerListTooLarge(Int)
}

/// The client side of one HTTP/2 connection over nghttp2's session API (RFC 9113), used toward
/// origins. Like `HTTP2ServerSession`: no I/O and no threads; bytes in through `receive`, frames
/// out through `writeOutput`; response windows reopen only through `consume`.
public final class HTTP2ClientSession {  // confined to the owning connection's loop queue
    public unowned(unsafe) var delegate: HTTP2ClientSessionDelegate?
    public let settings: HTTP2ClientSettings
    private let core: HTTP2SessionCore
    private var session: OpaquePointer { core.session }
    private var incoming = HTTP2IncomingSection()
    /// Streams whose final (non-1xx) response head arrived: a later HEADERS is the trailer section.
    private var answered = IDTable<Int32, Void>()
    /// Why streams ended early, until their close is reported.
    private var problems = IDTable<Int32, HTTP2StreamProblem>()

    public init(settings: HTTP2ClientSettings) throws {
        self.settings = settings
        self.core = try HTTP2SessionCore(server: false, maxContinuations: settings.maxContinuations,
                                         streamBufferBytes: settings.streamBufferBytes, install: Self.install) { option in
            nghttp2_option_set_peer_max_concurrent_streams(option, settings.assumedMaxConcurrentStreams)
        }
        core.setUserData(self)
        try core.submitSettings([
            (NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
            (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(settings.maxHeaderListBytes)),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UInt32(settings.initialStreamWindow)),
        ])
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, settings.connectionWindow)
    }

    // MARK: - Bytes in and out

    /// Feeds what the origin sent. A thrown error means the connection is unusable.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        let result = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 {
            let error = HTTP2SessionError(code: Int32(result))
            nghttp2_session_terminate_session(session, HTTP2ErrorCode.protocolError.rawValue)
            throw error
        }
    }

    /// Hands queued frames (the connection preface first) to `write` until there are none
    /// (returns true) or `write` returns false; then tells producers of drained streams to go on.
    public func writeOutput(_ write: (UnsafeRawBufferPointer) -> Bool) throws -> Bool {
        try core.writeOutput(write) { stream in delegate?.http2Session(self, canSendMoreOn: stream) }
    }

    /// False once both sides are done (after a GOAWAY, nothing left to send or receive).
    public var isActive: Bool { core.isActive }

    /// Whether a new stream may be opened: no GOAWAY either way (§6.8).
    public var acceptsNewStreams: Bool { nghttp2_session_check_request_allowed(session) != 0 }

    /// The origin's SETTINGS_MAX_CONCURRENT_STREAMS (until it says, `assumedMaxConcurrentStreams`).
    public var maxConcurrentStreams: Int {
        Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    // MARK: - Requests

    /// Opens a stream with the request's header section (pseudo-fields first). With `hasBody`
    /// the body follows through `enqueueBody` and `finishBody`; without, the HEADERS frame ends
    /// the stream. Returns the stream id.
    public func submitRequest(_ headers: [HTTP2Header], hasBody: Bool) throws -> Int32 {
        let stream: Int32 = HTTP2NameValues.with(headers) { nva, count in
            submitRequest(nva, count, hasBody: hasBody)
        }
        guard stream > 0 else { throw HTTP2SessionError(code: stream) }
        if hasBody { core.expectBody(on: stream) }
        return stream
    }

    /// The same for a request head's parts, translated on the way (`HTTP2MessageTranslation
    /// .requestHeaders` says how) and written straight into nghttp2's array. Returns the stream
    /// and the header section's size as RFC 9113 §6.5.2 counts it.
    public func submitRequest(method: String, scheme: String, authority: String, path: String, fields: HTTPFields,
                              acceptsTrailers: Bool, hasBody: Bool) throws -> (stream: Int32, headerBytes: Int) {
        let (stream, headerBytes): (Int32, Int) = HTTP2NameValues.with(maxCount: fields.count + 5) { writer in
            HTTP2MessageTranslation.writeRequest(method: method, scheme: scheme, authority: authority, path: path,
                                                 fields: fields, acceptsTrailers: acceptsTrailers, to: &writer)
        } _: { nva, count, listSize in
            (submitRequest(nva, count, hasBody: hasBody), listSize)
        }
        guard stream > 0 else { throw HTTP2SessionError(code: stream) }
        if hasBody { core.expectBody(on: stream) }
        return (stream, headerBytes)
    }

    private func submitRequest(_ nva: UnsafePointer<nghttp2_nv>, _ count: Int, hasBody: Bool) -> Int32 {
        guard hasBody else { return nghttp2_submit_request(session, nil, nva, count, nil, nil) }
        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: Self.readBody)
        return nghttp2_submit_request(session, nil, nva, count, &provider, nil)
    }

    /// Queues request body bytes. False when the stream holds `streamBufferBytes` or more: the
    /// producer waits for `canSendMoreOn` (the bytes were queued all the same).
    @discardableResult
    public func enqueueBody(stream: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        core.enqueueBody(stream: stream, bytes)
    }

    /// Ends the request body, with a trailer section if there is one (gRPC clients send none,
    /// but HTTP/1.1 chunked requests may).
    public func finishBody(stream: Int32, trailers: [HTTP2Header]?) {
        core.finishBody(stream: stream, trailers: trailers)
    }

    /// Resets the stream (RST_STREAM, §6.4): the exchange no longer wants it.
    public func resetStream(_ stream: Int32, code: HTTP2ErrorCode) {
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code.rawValue)
    }

    /// Reopens the stream's window by `count` bytes of response body the owner has passed on.
    public func consume(stream: Int32, count: Int) {
        core.consume(stream: stream, count: count)
    }

    /// Asks the origin for a PING ACK (§6.7): is the connection still alive?
    public func ping() {
        nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Graceful close (§6.8): no new streams; those open may finish.
    public func goAway() {
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                              HTTP2ErrorCode.noError.rawValue, nil, 0)
    }

    // MARK: - nghttp2 callbacks

    /// Runs `body` with the session named in nghttp2's user data, without a retain and release
    /// per callback (dozens per exchange): nghttp2 calls back only from inside a call the session
    /// made on itself, so the session is alive throughout, as `self` is in that method.
    private static func with<R>(_ userData: UnsafeMutableRawPointer?, _ body: (HTTP2ClientSession) -> R) -> R {
        Unmanaged<HTTP2ClientSession>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
    }

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            return HTTP2ClientSession.with(userData) { this in
                this.incoming.begin(frame.pointee.hd.stream_id)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { session, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let value else { return 0 }
            return HTTP2ClientSession.with(userData) { this in
                let stream = frame.pointee.hd.stream_id
                let limit = this.settings.maxHeaderListBytes
                if this.incoming.append(stream, name: name, nameLength: nameLength, value: value, valueLength: valueLength,
                                        limit: limit) {
                    // Past our own SETTINGS_MAX_HEADER_LIST_SIZE: the stream ends.
                    this.problems[stream] = .headerListTooLarge(limit)
                    nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream,
                                              HTTP2ErrorCode.internalError.rawValue)
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            return HTTP2ClientSession.with(userData) { this in
                this.received(frame.pointee)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, stream, data, length, userData in
            guard let data else { return 0 }
            nghttp2_session_consume_connection(session, length)
            return HTTP2ClientSession.with(userData) { this in
                this.delegate?.http2Session(this, didReceiveData: UnsafeRawBufferPointer(start: data, count: length), stream: stream)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { _, frame, code, userData in
            guard let frame else { return 0 }
            return HTTP2ClientSession.with(userData) { this in
                let stream = frame.pointee.hd.stream_id
                this.incoming.forget(stream)
                if stream != 0, this.problems[stream] == nil {
                    this.problems[stream] = .malformed(String(cString: nghttp2_strerror(code)))
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, code, userData in
            return HTTP2ClientSession.with(userData) { this in
                this.incoming.forget(stream)
                this.core.forgetBody(of: stream)
                this.answered.removeValue(forKey: stream)
                let problem = this.problems.removeValue(forKey: stream)
                this.delegate?.http2Session(this, didCloseStream: stream, code: HTTP2ErrorCode(rawValue: code), problem: problem)
                return 0
            }
        }
    }

    private func received(_ frame: nghttp2_frame) {
        let stream = frame.hd.stream_id
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            guard let fields = incoming.take(stream), !fields.oversized else { return }
            if answered.contains(stream) {
                // A trailer section (§8.1): nghttp2 has checked that it ends the stream.
                delegate?.http2Session(self, didFinishResponse: stream, trailers: fields.headers)
                return
            }
            let status = fields.headers.first { $0.name == ":status" }?.value ?? ""
            if !status.hasPrefix("1") { answered[stream] = () }
            delegate?.http2Session(self, didReceiveResponse: fields.headers, stream: stream, endStream: endStream,
                                   fieldBytes: fields.bytes)
            if endStream { delegate?.http2Session(self, didFinishResponse: stream, trailers: nil) }
        case NGHTTP2_DATA.rawValue:
            if endStream { delegate?.http2Session(self, didFinishResponse: stream, trailers: nil) }
        case NGHTTP2_RST_STREAM.rawValue:
            if problems[stream] == nil { problems[stream] = .resetByPeer }
        case NGHTTP2_SETTINGS.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { delegate?.http2SessionDidReceiveSettings(self) }
        case NGHTTP2_PING.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { delegate?.http2SessionDidReceivePingAck(self) }
        case NGHTTP2_GOAWAY.rawValue:
            let goaway = frame.goaway
            let debugData = goaway.opaque_data.map {
                String(decoding: UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len), as: UTF8.self)
            } ?? ""
            delegate?.http2Session(self, didReceiveGoAway: HTTP2ErrorCode(rawValue: goaway.error_code),
                                   lastStreamID: goaway.last_stream_id, debugData: debugData)
        default:
            break
        }
    }

    /// nghttp2 asks for up to `length` bytes of the stream's request body.
    private static let readBody: nghttp2_data_source_read_callback = { _, stream, buffer, length, flags, _, userData in
        HTTP2ClientSession.with(userData) { this in
            this.core.answerBodyRead(stream: stream, into: buffer, length: length, flags: flags)
        }
    }
}
