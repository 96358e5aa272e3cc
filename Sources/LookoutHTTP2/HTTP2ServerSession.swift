import CLookoutNGHTTP2
import HTTPTypes
import LookoutHTTP

/// Limits and windows of the server side of an HTTP/2 connection.
public struct HTTP2ServerSettings: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 §6.5.2): streams past it are refused.
    public var maxConcurrentStreams: UInt32 = 128
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a request whose fields add up to more (name + value + 32
    /// per field, §6.5.2) is answered 431 without being forwarded.
    public var maxHeaderListBytes: Int = 65536
    /// How much request body a stream may send before Lookout has passed it on (§6.9.2).
    public var initialStreamWindow: Int32 = 65535
    /// The connection's receive window: bytes are taken off it as soon as they arrive, so it only
    /// needs to cover what is in flight; the per-stream windows are the backpressure.
    public var connectionWindow: Int32 = 1 << 20
    /// Response body bytes queued per stream before `enqueueBody` asks the producer to wait.
    public var streamBufferBytes = 64 * 1024
    /// Resets a client may send in a burst, then per second, before the connection is closed with
    /// GOAWAY ENHANCE_YOUR_CALM (rapid reset, CVE-2023-44487).
    public var resetBurst = 200
    public var resetsPerSecond = 100
    /// The same for PING, SETTINGS, PRIORITY and empty DATA frames.
    public var controlFrameBurst = 100
    public var controlFramesPerSecond = 50
    /// CONTINUATION frames allowed after one HEADERS (CVE-2024-27316 and its kin).
    public var maxContinuations = 8
    /// Requests may carry an absolute-form `:path`, as a forward proxy's clients send after an
    /// `Upgrade: h2c` (curl does). nghttp2's message checks refuse those with `:scheme` http, so
    /// they are turned off and the session makes the rest of them itself (`HTTP2RequestValidation`).
    public var acceptsAbsolutePaths = false

    public init() {}
}

/// What the server side of an HTTP/2 connection tells its owner. Every call happens on the
/// owner's queue, from inside `receive` or `writeOutput`; the owner may submit frames from them
/// (nghttp2 allows `nghttp2_submit_*` in callbacks) but not call `receive` or `writeOutput`.
public protocol HTTP2ServerSessionDelegate: AnyObject {
    /// A request's header section (RFC 9113 §8.1), already validated by nghttp2 (§8.1.1, §8.2,
    /// §8.3): pseudo-fields first, then the fields in order. `endStream`: no body follows.
    /// `fieldBytes` is the section's size as §6.5.2 counts it.
    func http2Session(_ session: HTTP2ServerSession, didReceiveRequest headers: [HTTP2Header], stream: Int32,
                      endStream: Bool, fieldBytes: Int)
    /// A request whose header section exceeded `maxHeaderListBytes`: its fields were not kept.
    func http2Session(_ session: HTTP2ServerSession, didReceiveOversizedRequest stream: Int32, fieldBytes: Int)
    func http2Session(_ session: HTTP2ServerSession, didReceiveData bytes: UnsafeRawBufferPointer, stream: Int32)
    /// The request is complete (END_STREAM), with its trailer section if it had one.
    func http2Session(_ session: HTTP2ServerSession, didFinishRequest stream: Int32, trailers: [HTTP2Header]?)
    /// nghttp2 refused a frame of the stream as malformed (§8.1.1) and reset it.
    func http2Session(_ session: HTTP2ServerSession, didRejectMalformed stream: Int32, reason: String)
    /// The stream is closed; `byPeer`: the client reset it (RST_STREAM) or the connection ended.
    func http2Session(_ session: HTTP2ServerSession, didCloseStream stream: Int32, code: HTTP2ErrorCode, byPeer: Bool)
    /// The stream's queued response body fell below half of `streamBufferBytes`: send more.
    func http2Session(_ session: HTTP2ServerSession, canSendMoreOn stream: Int32)
    /// The client is going away (GOAWAY): no new streams above `lastStreamID` will come.
    func http2Session(_ session: HTTP2ServerSession, didReceiveGoAway code: HTTP2ErrorCode, lastStreamID: Int32)
    /// A GOAWAY with an error `code` went out (RFC 9113 §5.4.1): a connection error nghttp2 found
    /// (`reason` is its debug data), or Lookout's own — a bad preface, a stream id going backwards,
    /// abuse cut off with ENHANCE_YOUR_CALM. Told once per connection.
    func http2Session(_ session: HTTP2ServerSession, didEndWith code: HTTP2ErrorCode, reason: String)
}

/// The server side of one HTTP/2 connection over nghttp2's session API: nghttp2 does framing,
/// HPACK, stream states and flow control (RFC 9113); this class feeds it bytes, collects what it
/// parsed into values for the delegate, and queues response bodies per stream.
///
/// No I/O and no threads: the owner passes what it read to `receive` and writes what
/// `writeOutput` hands it, so the connection's own backpressure applies. Request body windows
/// are not reopened by nghttp2 but by `consume`, once the owner has passed the bytes on.
public final class HTTP2ServerSession {  // confined to the owning connection's loop queue
    public unowned(unsafe) var delegate: HTTP2ServerSessionDelegate?
    public let settings: HTTP2ServerSettings
    private let core: HTTP2SessionCore
    private var session: OpaquePointer { core.session }

    private var incoming = HTTP2IncomingSection()
    /// Streams the peer reset (RST_STREAM received), until their close is reported.
    private var resetByPeer = IDTable<Int32, Void>()
    private var resets: FrameRateLimit
    private var controlFrames: FrameRateLimit
    /// Set once the connection is being cut off for abuse.
    public private(set) var abuse: String?
    /// Set once a GOAWAY that ends the connection is queued: nothing new is started.
    public private(set) var isTerminating = false
    /// Why Lookout ended the connection, for the GOAWAY's report; and whether that went out.
    private var terminationReason: String?
    private var reportedEnd = false
    /// The highest stream a request arrived on, and ranges of lower ones the client skipped
    /// (idle streams closed implicitly by a higher one, RFC 9113 §5.1.1), newest last.
    private var highestStream: Int32 = 0
    private var skippedStreams: [ClosedRange<Int32>] = []
    /// The connection window grows once the client's preface arrived: a client that sends no
    /// preface hears nothing but SETTINGS and the GOAWAY (h2spec 3.5).
    private var connectionWindowOpened = false
    /// With `acceptsAbsolutePaths`: per stream with a `content-length`, the length and the DATA
    /// bytes so far, which must agree at END_STREAM (RFC 9113 §8.1.1).
    private var declaredLengths = IDTable<Int32, (declared: UInt64, received: UInt64)>()

    public init(settings: HTTP2ServerSettings) throws {
        self.settings = settings
        self.resets = FrameRateLimit(burst: settings.resetBurst, perSecond: settings.resetsPerSecond)
        self.controlFrames = FrameRateLimit(burst: settings.controlFrameBurst, perSecond: settings.controlFramesPerSecond)
        self.core = try HTTP2SessionCore(server: true, maxContinuations: settings.maxContinuations,
                                         streamBufferBytes: settings.streamBufferBytes, install: Self.install) { option in
            // nghttp2's own rapid-reset limit stays above Lookout's, which answers ENHANCE_YOUR_CALM.
            nghttp2_option_set_stream_reset_rate_limit(option, UInt64(settings.resetBurst) * 4,
                                                       UInt64(settings.resetsPerSecond) * 4)
            if settings.acceptsAbsolutePaths { nghttp2_option_set_no_http_messaging(option, 1) }
        }
        core.setUserData(self)
        try core.submitSettings([
            (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.maxConcurrentStreams),
            (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(settings.maxHeaderListBytes)),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UInt32(settings.initialStreamWindow)),
            (NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
        ])
    }

    /// Takes over a connection that asked for `Upgrade: h2c` (RFC 7540 §3.2): `settingsPayload`
    /// is its `HTTP2-Settings`, decoded; stream 1 is the upgraded request, already complete.
    /// Throws when the payload is not a SETTINGS frame's; the connection then stays HTTP/1.1.
    public func upgrade(settingsPayload: [UInt8], headRequest: Bool) throws {
        // nghttp2 takes values a SETTINGS frame may not carry and then ends the connection it
        // has just upgraded; such a header is refused first, so the request stays HTTP/1.1.
        if let problem = Self.settingsProblem(settingsPayload) { throw HTTP2SessionError(problem) }
        let result = settingsPayload.withUnsafeBufferPointer { payload in
            nghttp2_session_upgrade2(session, payload.baseAddress, payload.count, headRequest ? 1 : 0, nil)
        }
        guard result == 0 else { throw HTTP2SessionError(code: result) }
        highestStream = 1
    }

    /// Why a SETTINGS payload is invalid (RFC 9113 §6.5: six bytes per setting; §6.5.2: the
    /// ranges of ENABLE_PUSH, INITIAL_WINDOW_SIZE and MAX_FRAME_SIZE), or nil.
    static func settingsProblem(_ payload: [UInt8]) -> String? {
        guard payload.count % 6 == 0 else { return "a SETTINGS payload of \(payload.count) bytes" }
        for start in stride(from: 0, to: payload.count, by: 6) {
            let id = UInt16(payload[start]) << 8 | UInt16(payload[start + 1])
            let value = payload[(start + 2)..<(start + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            switch Int32(id) {
            case Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue) where value > 1:
                return "SETTINGS_ENABLE_PUSH \(value)"
            case Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue) where value > UInt32(Int32.max):
                return "SETTINGS_INITIAL_WINDOW_SIZE \(value)"
            case Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue) where !(16_384...16_777_215).contains(value):
                return "SETTINGS_MAX_FRAME_SIZE \(value)"
            default: continue
            }
        }
        return nil
    }

    // MARK: - Bytes in and out

    /// Feeds what the client sent. A thrown error means the connection is unusable (nghttp2 has
    /// queued a GOAWAY where it could): write out what is left, then close.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        let result = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 {
            // nghttp2 sends no GOAWAY for a fatal error (a bad preface among them): one says
            // PROTOCOL_ERROR before the connection ends (RFC 9113 §3.4, §5.4.1).
            let error = HTTP2SessionError(code: Int32(result))
            terminate(.protocolError, reason: error.message)
            throw error
        }
    }

    /// Hands queued frames to `write` until there are none (returns true) or `write` returns
    /// false: the connection is backed up, and this returns false so the owner calls again when
    /// it drains. Then tells producers of streams that drained to go on.
    public func writeOutput(_ write: (UnsafeRawBufferPointer) -> Bool) throws -> Bool {
        try core.writeOutput(write) { stream in delegate?.http2Session(self, canSendMoreOn: stream) }
    }

    /// False once both sides are done: after a GOAWAY, with nothing left to send or receive.
    public var isActive: Bool { core.isActive }

    // MARK: - Responses

    /// Submits a response head; without `endStream` a body follows through `enqueueBody`.
    public func sendResponse(stream: Int32, status: Int, headers: [HTTP2Header], endStream: Bool) {
        let result: Int32 = HTTP2NameValues.with(headers, leading: HTTP2Header(":status", String(status))) { nva, count in
            submitResponse(stream: stream, nva, count, endStream: endStream)
        }
        if result != 0 { core.forgetBody(of: stream) }
    }

    /// The same for a response head's fields, translated on the way (`HTTP2MessageTranslation`:
    /// no connection-specific fields, §8.2.2) and written straight into nghttp2's array.
    public func sendResponse(stream: Int32, status: Int, fields: HTTPFields, endStream: Bool) {
        let result: Int32 = HTTP2NameValues.with(maxCount: fields.count + 1) { writer in
            HTTP2MessageTranslation.writeResponse(status: status, fields: fields, to: &writer)
        } _: { nva, count, _ in
            submitResponse(stream: stream, nva, count, endStream: endStream)
        }
        if result != 0 { core.forgetBody(of: stream) }
    }

    private func submitResponse(stream: Int32, _ nva: UnsafePointer<nghttp2_nv>, _ count: Int, endStream: Bool) -> Int32 {
        if endStream { return nghttp2_submit_response(session, stream, nva, count, nil) }
        core.expectBody(on: stream)
        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: Self.readBody)
        return nghttp2_submit_response(session, stream, nva, count, &provider)
    }

    /// An interim response (1xx, RFC 9113 §8.1): a HEADERS frame that does not end the stream.
    public func sendInformational(stream: Int32, status: Int, headers: [HTTP2Header]) {
        _ = HTTP2NameValues.with(headers, leading: HTTP2Header(":status", String(status))) { nva, count in
            nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, nil, nva, count, nil)
        }
    }

    /// Queues response body bytes. False when the stream holds `streamBufferBytes` or more: the
    /// producer waits for `canSendMoreOn` (the bytes were queued all the same).
    @discardableResult
    public func enqueueBody(stream: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        core.enqueueBody(stream: stream, bytes)
    }

    /// Ends the response body, with a trailer section if there is one (gRPC status travels there).
    public func finishBody(stream: Int32, trailers: [HTTP2Header]?) {
        core.finishBody(stream: stream, trailers: trailers)
    }

    /// Resets the stream: at once, or after the body queued so far (a response that broke off
    /// reaches the client as far as it came, then the reset).
    public func resetStream(_ stream: Int32, code: HTTP2ErrorCode, afterQueuedBody: Bool) {
        if afterQueuedBody, let body = core.body(of: stream), !body.ended {
            body.ended = true
            body.resetCode = code
            body.resumeIfDeferred(session, stream: stream)
            return
        }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code.rawValue)
    }

    /// Reopens the stream's window by `count` bytes of request body the owner has passed on.
    public func consume(stream: Int32, count: Int) {
        core.consume(stream: stream, count: count)
    }

    /// Response body bytes of the stream not yet handed to the connection, and those that were.
    public func bodyProgress(stream: Int32) -> (queued: Int, sent: UInt64)? {
        core.body(of: stream).map { ($0.pending, $0.bytesSent) }
    }

    /// The client's flow-control window for the stream: 0 means it has stopped taking the body.
    public func peerWindow(stream: Int32) -> Int {
        let stream = Int(nghttp2_session_get_stream_remote_window_size(session, stream))
        let connection = Int(nghttp2_session_get_remote_window_size(session))
        return min(stream, connection)
    }

    /// Graceful shutdown (RFC 9113 §6.8): streams begun so far may finish, new ones are refused.
    public func goAway() {
        let last = nghttp2_session_get_last_proc_stream_id(session)
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, HTTP2ErrorCode.noError.rawValue, nil, 0)
    }

    /// Ends the connection with `code`; only the GOAWAY is sent after this.
    /// `reason` is what the owner hears with the GOAWAY (`didEndWith`) when `code` is an error.
    public func terminate(_ code: HTTP2ErrorCode, reason: String) {
        guard !isTerminating else { return }
        isTerminating = true
        terminationReason = reason
        nghttp2_session_terminate_session(session, code.rawValue)
    }

    /// RFC 9113 §5.1.1: a request on a stream numerically smaller than one already opened, which
    /// was never opened itself, is a connection error of type PROTOCOL_ERROR. nghttp2 takes such
    /// a stream for a closed one and ignores it; this catches it from the frame header.
    private func checkStreamOrder(_ stream: Int32) {
        guard stream & 1 == 1 else { return }
        if stream > highestStream {
            // The first client stream is 1 (§5.1.1): a first request on 5 skipped 1 and 3.
            let next = highestStream == 0 ? 1 : highestStream + 2
            if stream > next {
                skippedStreams.append(next...(stream - 2))
                if skippedStreams.count > 64 { skippedStreams.removeFirst() }
            }
            highestStream = stream
        } else if skippedStreams.contains(where: { $0.contains(stream) }) {
            terminate(.protocolError, reason: "a request on stream \(stream), lower than one already opened (RFC 9113 §5.1.1)")
        }
    }

    private func cutOff(_ reason: String) {
        guard abuse == nil else { return }
        abuse = reason
        terminate(.enhanceYourCalm, reason: reason)
    }

    // MARK: - nghttp2 callbacks

    /// Runs `body` with the session named in nghttp2's user data, without a retain and release
    /// per callback (dozens per exchange): nghttp2 calls back only from inside a call the session
    /// made on itself, so the session is alive throughout, as `self` is in that method.
    private static func with<R>(_ userData: UnsafeMutableRawPointer?, _ body: (HTTP2ServerSession) -> R) -> R {
        Unmanaged<HTTP2ServerSession>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
    }

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks) { _, header, userData in
            guard let header, header.pointee.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            return HTTP2ServerSession.with(userData) { this in
                this.checkStreamOrder(header.pointee.stream_id)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            return HTTP2ServerSession.with(userData) { this in
                this.incoming.begin(frame.pointee.hd.stream_id)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let value else { return 0 }
            return HTTP2ServerSession.with(userData) { this in
                let stream = frame.pointee.hd.stream_id
                _ = this.incoming.append(stream, name: name, nameLength: nameLength, value: value, valueLength: valueLength,
                                         limit: this.settings.maxHeaderListBytes)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            return HTTP2ServerSession.with(userData) { this in
                this.received(frame.pointee)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, stream, data, length, userData in
            guard let data else { return 0 }
            // The connection window reopens at once; the stream's only when the bytes moved on.
            nghttp2_session_consume_connection(session, length)
            return HTTP2ServerSession.with(userData) { this in
                if this.settings.acceptsAbsolutePaths && !this.countData(length, stream: stream) {
                    nghttp2_session_consume_stream(session, stream, length)
                    return 0
                }
                this.delegate?.http2Session(this, didReceiveData: UnsafeRawBufferPointer(start: data, count: length), stream: stream)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { _, frame, code, userData in
            guard let frame else { return 0 }
            return HTTP2ServerSession.with(userData) { this in
                let stream = frame.pointee.hd.stream_id
                this.incoming.forget(stream)
                if stream != 0 {
                    let reason = String(cString: nghttp2_strerror(code))
                    this.delegate?.http2Session(this, didRejectMalformed: stream, reason: reason)
                }
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) else { return 0 }
            return HTTP2ServerSession.with(userData) { this in
                this.sent(frame.pointee.goaway)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, code, userData in
            return HTTP2ServerSession.with(userData) { this in
                this.closed(stream, code: code)
                return 0
            }
        }
    }

    /// A GOAWAY this side sent: an error ends the session for the delegate, once.
    private func sent(_ goaway: nghttp2_goaway) {
        guard goaway.error_code != HTTP2ErrorCode.noError.rawValue, !reportedEnd else { return }
        reportedEnd = true
        isTerminating = true
        let debugData = goaway.opaque_data.map {
            String(decoding: UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len), as: UTF8.self)
        } ?? ""
        let code = HTTP2ErrorCode(rawValue: goaway.error_code)
        let reason = terminationReason ?? (debugData.isEmpty ? code.registeredName : debugData)
        delegate?.http2Session(self, didEndWith: code, reason: reason)
    }

    /// A stream closed (ended, reset by either side, or refused): its state goes.
    private func closed(_ stream: Int32, code: UInt32) {
        incoming.forget(stream)
        core.forgetBody(of: stream)
        declaredLengths[stream] = nil
        let byPeer = resetByPeer.removeValue(forKey: stream) != nil
        delegate?.http2Session(self, didCloseStream: stream, code: HTTP2ErrorCode(rawValue: code), byPeer: byPeer)
    }

    private func received(_ frame: nghttp2_frame) {
        let stream = frame.hd.stream_id
        if !connectionWindowOpened {
            // The client's preface is in (its SETTINGS is the first frame nghttp2 accepts).
            connectionWindowOpened = true
            nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, settings.connectionWindow)
        }
        if isTerminating && frame.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) { return }
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            guard let fields = incoming.take(stream) else { return }
            if frame.headers.cat == NGHTTP2_HCAT_REQUEST {
                if fields.oversized {
                    delegate?.http2Session(self, didReceiveOversizedRequest: stream, fieldBytes: fields.bytes)
                } else {
                    if settings.acceptsAbsolutePaths, let problem = checkRequest(fields.headers, stream: stream) {
                        rejectMalformed(stream, problem)
                        return
                    }
                    delegate?.http2Session(self, didReceiveRequest: fields.headers, stream: stream, endStream: endStream,
                                           fieldBytes: fields.bytes)
                }
                if endStream { finishRequest(stream, trailers: nil) }
            } else if settings.acceptsAbsolutePaths,
                      let problem = endStream ? (fields.oversized ? nil : HTTP2RequestValidation.problem(inTrailers: fields.headers))
                                              : "a header section that does not end the stream (RFC 9113 §8.1)" {
                rejectMalformed(stream, problem)
            } else if endStream {
                // A trailer section (§8.1): nghttp2 has checked that it ends the stream.
                finishRequest(stream, trailers: fields.oversized ? nil : fields.headers)
            }
        case NGHTTP2_DATA.rawValue:
            if frame.hd.length == 0 && !endStream && !controlFrames.take() {
                cutOff("a flood of empty DATA frames")
                return
            }
            if endStream { finishRequest(stream, trailers: nil) }
        case NGHTTP2_RST_STREAM.rawValue:
            resetByPeer[stream] = ()
            if !resets.take() { cutOff("rapid reset: streams opened and reset faster than \(settings.resetsPerSecond) a second") }
        case NGHTTP2_PING.rawValue, NGHTTP2_SETTINGS.rawValue, NGHTTP2_PRIORITY.rawValue:
            let isAck = frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
            if !isAck && !controlFrames.take() {
                let name = switch UInt32(frame.hd.type) {
                case NGHTTP2_PING.rawValue: "PING"
                case NGHTTP2_SETTINGS.rawValue: "SETTINGS"
                default: "PRIORITY"
                }
                cutOff("a flood of \(name) frames")
            }
        case NGHTTP2_GOAWAY.rawValue:
            delegate?.http2Session(self, didReceiveGoAway: HTTP2ErrorCode(rawValue: frame.goaway.error_code),
                                   lastStreamID: frame.goaway.last_stream_id)
        default:
            break
        }
    }

    // MARK: - Checks nghttp2 leaves to the session (`acceptsAbsolutePaths`)

    /// Why the request's header section is malformed, or nil; notes its `content-length`.
    private func checkRequest(_ headers: [HTTP2Header], stream: Int32) -> String? {
        if let problem = HTTP2RequestValidation.problem(inRequest: headers) { return problem }
        switch HTTP2RequestValidation.contentLength(in: headers) {
        case .failure(let error): return error.reason
        case .success(let length): if let length { declaredLengths[stream] = (length, 0) }
        }
        return nil
    }

    /// DATA arrived: false when it runs past the declared `content-length` (the stream is reset).
    private func countData(_ count: Int, stream: Int32) -> Bool {
        guard var lengths = declaredLengths[stream] else { return true }
        lengths.received += UInt64(count)
        guard lengths.received <= lengths.declared else {
            rejectMalformed(stream, "more DATA than its content-length of \(lengths.declared) (RFC 9113 §8.1.1)")
            return false
        }
        declaredLengths[stream] = lengths
        return true
    }

    /// END_STREAM: the request is complete, unless its DATA fell short of its `content-length`.
    private func finishRequest(_ stream: Int32, trailers: [HTTP2Header]?) {
        if let lengths = declaredLengths.removeValue(forKey: stream), lengths.received != lengths.declared {
            rejectMalformed(stream, "\(lengths.received) bytes of DATA for a content-length of \(lengths.declared) (RFC 9113 §8.1.1)")
            return
        }
        delegate?.http2Session(self, didFinishRequest: stream, trailers: trailers)
    }

    /// RFC 9113 §8.1.1: a malformed request is a stream error of type PROTOCOL_ERROR.
    private func rejectMalformed(_ stream: Int32, _ reason: String) {
        declaredLengths[stream] = nil
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, HTTP2ErrorCode.protocolError.rawValue)
        delegate?.http2Session(self, didRejectMalformed: stream, reason: reason)
    }

    /// nghttp2 asks for up to `length` bytes of the stream's body.
    private static let readBody: nghttp2_data_source_read_callback = { session, stream, buffer, length, flags, _, userData in
        HTTP2ServerSession.with(userData) { this in
            this.core.answerBodyRead(stream: stream, into: buffer, length: length, flags: flags) {
                if nghttp2_session_get_stream_remote_close(session, stream) == 0 {
                    // The response is complete before the request (RFC 9113 §8.1): the client is
                    // asked to stop sending, without error.
                    nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream,
                                              HTTP2ErrorCode.noError.rawValue)
                }
            }
        }
    }
}
