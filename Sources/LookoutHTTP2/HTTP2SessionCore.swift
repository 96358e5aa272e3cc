import CLookoutNGHTTP2
import HTTPTypes
import LookoutHTTP

/// What both sides of an HTTP/2 connection do alike over one nghttp2 session: create it with
/// Lookout's options, hand its frames to the owner's writes, queue the streams' bodies until
/// their windows let them out (RFC 9113 §5.2), and reopen receive windows only as the owner
/// passes bytes on. `HTTP2ServerSession` and `HTTP2ClientSession` each own one and add what
/// their side does differently.
final class HTTP2SessionCore {  // confined to the owning connection's loop queue
    let session: OpaquePointer
    private let streamBufferBytes: Int
    private var bodies = IDTable<Int32, HTTP2OutboundBody>()
    /// Streams whose producer may continue, told after the output loop.
    private var drained: [Int32] = []

    /// Creates the session: `install` sets the callbacks, `configure` adds options to the ones
    /// both sides use (windows reopened by the owner, at most `maxContinuations` CONTINUATION
    /// frames per header block). The owner then names itself with `setUserData`.
    init(server: Bool, maxContinuations: Int, streamBufferBytes: Int,
         install: (OpaquePointer) -> Void, configure: (OpaquePointer) -> Void) throws {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { throw HTTP2SessionError("out of memory") }
        defer { nghttp2_session_callbacks_del(callbacks) }
        install(callbacks)
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { throw HTTP2SessionError("out of memory") }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_max_continuations(option, maxContinuations)
        configure(option)
        var created: OpaquePointer?
        let result = server ? nghttp2_session_server_new2(&created, callbacks, nil, option)
                            : nghttp2_session_client_new2(&created, callbacks, nil, option)
        guard result == 0, let created else { throw HTTP2SessionError(code: result) }
        self.session = created
        self.streamBufferBytes = streamBufferBytes
    }

    deinit {
        nghttp2_session_del(session)
    }

    /// What nghttp2 hands the callbacks: the owning session object, unretained.
    func setUserData(_ owner: AnyObject) {
        nghttp2_session_set_user_data(session, Unmanaged.passUnretained(owner).toOpaque())
    }

    /// Submits the side's SETTINGS (RFC 9113 §6.5).
    func submitSettings(_ settings: [(nghttp2_settings_id, UInt32)]) throws {
        var entries = settings.map { nghttp2_settings_entry(settings_id: Int32($0.0.rawValue), value: $0.1) }
        let submitted = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        guard submitted == 0 else { throw HTTP2SessionError(code: submitted) }
    }

    // MARK: - Bytes out

    /// Frames are gathered up to this many bytes before a `write`: nghttp2 hands them out one at a
    /// time, and over TLS every write is a record of its own, with OpenSSL's fixed cost per record
    /// (cipher context set-up, parameter lookups) and 22 bytes of overhead. 16 KiB is the largest
    /// plaintext a TLS record carries (RFC 8446 §5.1).
    static let coalescedWriteBytes = 16 * 1024

    /// Hands queued frames to `write` until there are none (returns true) or `write` returns
    /// false (the connection is backed up; returns false). Small frames are passed on together,
    /// up to `coalescedWriteBytes` per write; a frame that size or larger goes on its own, uncopied.
    /// Then tells `canSendMore` of the streams whose queue drained.
    func writeOutput(_ write: (UnsafeRawBufferPointer) -> Bool, canSendMore: (Int32) -> Void) throws -> Bool {
        let keptUp = try HTTP2GatherBuffer.with { gathered in
            var gatheredCount = 0
            var keptUp = true
            func writeGathered() {
                guard gatheredCount > 0 else { return }
                keptUp = write(UnsafeRawBufferPointer(rebasing: gathered[0..<gatheredCount])) && keptUp
                gatheredCount = 0
            }
            while keptUp {
                var data: UnsafePointer<UInt8>?
                // The bytes stay valid only until the next call: they are written or copied first.
                let count = nghttp2_session_mem_send(session, &data)
                if count < 0 { writeGathered(); throw HTTP2SessionError(code: Int32(count)) }
                guard count > 0, let data else { break }
                let frame = UnsafeRawBufferPointer(start: data, count: count)
                if gatheredCount + count > gathered.count { writeGathered() }
                if count >= gathered.count {
                    keptUp = write(frame) && keptUp
                } else {
                    UnsafeMutableRawBufferPointer(rebasing: gathered[gatheredCount...]).copyMemory(from: frame)
                    gatheredCount += count
                }
            }
            writeGathered()
            return keptUp
        }
        while !drained.isEmpty {
            let streams = drained
            drained = []
            for stream in streams { canSendMore(stream) }
        }
        return keptUp
    }

    /// False once both sides are done: after a GOAWAY, with nothing left to send or receive.
    var isActive: Bool {
        nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0
    }

    /// Reopens the stream's window by `count` bytes the owner has passed on.
    func consume(stream: Int32, count: Int) {
        guard count > 0 else { return }
        nghttp2_session_consume_stream(session, stream, count)
    }

    // MARK: - Bodies

    /// A body follows on `stream` (its HEADERS were submitted with `readBody` as data source).
    func expectBody(on stream: Int32) {
        bodies[stream] = HTTP2OutboundBody(limit: streamBufferBytes)
    }

    /// The stream's queue, while its body is being sent.
    func body(of stream: Int32) -> HTTP2OutboundBody? { bodies[stream] }

    /// The stream closed: its queue goes.
    func forgetBody(of stream: Int32) { bodies[stream] = nil }

    /// Queues body bytes. False when the stream holds its buffer's worth or more: the producer
    /// waits for `canSendMore` (the bytes were queued all the same).
    func enqueueBody(stream: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let body = bodies[stream], !body.ended else { return true }
        let belowLimit = body.append(bytes)
        body.resumeIfDeferred(session, stream: stream)
        return belowLimit
    }

    /// Ends the body, with a trailer section if there is one.
    func finishBody(stream: Int32, trailers: [HTTP2Header]?) {
        guard let body = bodies[stream], !body.ended else { return }
        body.ended = true
        body.trailers = trailers.flatMap { $0.isEmpty ? nil : $0 }
        body.resumeIfDeferred(session, stream: stream)
    }

    /// Answers nghttp2's data source read callback for either side: copies up to `length` queued
    /// bytes of `stream`'s body into nghttp2's frame and returns their count, or asks nghttp2 to
    /// wait (NGHTTP2_ERR_DEFERRED; the queue resumes it). At the body's end it sets EOF and submits
    /// what the body says follows: a reset (only the server side resets a response it relays), or
    /// a trailer section; `ended` is then told, unless the stream was reset.
    func answerBodyRead(stream: Int32, into buffer: UnsafeMutablePointer<UInt8>?, length: Int,
                        flags: UnsafeMutablePointer<UInt32>?, ended: () -> Void = {}) -> Int {
        guard let flags, let body = bodies[stream], let buffer else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let (count, producerMayContinue) = body.take(into: buffer, length: length)
        if producerMayContinue { drained.append(stream) }
        guard body.pending == 0 else { return count }
        guard body.ended else {
            if count > 0 { return count }
            body.deferSending()
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        if let code = body.resetCode {
            flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code.rawValue)
            return count
        }
        if let trailers = body.trailers {
            flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
            _ = HTTP2NameValues.with(trailers) { nva, n in nghttp2_submit_trailer(session, stream, nva, n) }
        }
        ended()
        return count
    }
}

/// A header section as it arrives field by field, kept no further than the side's limit on
/// header lists (SETTINGS_MAX_HEADER_LIST_SIZE, counted as RFC 9113 §6.5.2 does).
struct HTTP2IncomingFields {
    private(set) var headers: [HTTP2Header] = []
    /// Name + value + 32 per field.
    private(set) var bytes = 0
    private(set) var oversized = false

    /// Room for a usual header section up front (about a dozen fields), so appending does not
    /// reallocate the array four times on the way.
    init() { headers.reserveCapacity(16) }

    /// Adds one field. Past `limit` nothing more is kept (an HPACK bomb — small frames decoding to
    /// huge fields — stops being stored here); true when this field crossed it. A field with the
    /// same bytes as the one at its place in `previous` (the connection's last section) shares
    /// that field's strings instead of making its own.
    mutating func append(name: UnsafePointer<UInt8>, nameLength: Int, value: UnsafePointer<UInt8>, valueLength: Int,
                         limit: Int, previous: [HTTP2Header]) -> Bool {
        bytes += nameLength + valueLength + 32
        if bytes > limit {
            defer {
                oversized = true
                headers = []
            }
            return !oversized
        }
        if !oversized {
            let index = headers.count
            if index < previous.count,
               previous[index].hasBytes(name: name, nameLength: nameLength, value: value, valueLength: valueLength) {
                headers.append(previous[index])
            } else {
                headers.append(HTTP2NameValues.header(name: name, nameLength: nameLength, value: value,
                                                      valueLength: valueLength))
            }
        }
        return false
    }
}

/// The header section being received, from HEADERS to the frame that ends it. A header block
/// arrives in one piece — HEADERS, then only its CONTINUATION frames (RFC 9113 §4.3, §6.10) — so
/// a connection has at most one open at a time, and a new one replaces a section that failed
/// half-way. Kept as a plain value, not in a dictionary by stream: each field is appended in
/// place, where a dictionary's modify accessor allocated a coroutine frame per field (a quarter
/// of the event loop's allocations at 100 streams).
struct HTTP2IncomingSection {
    private var stream: Int32 = 0
    private var fields: HTTP2IncomingFields?
    /// The last section taken. Consecutive sections on a connection mostly repeat each other's
    /// fields in the same order (a client's requests, an origin's responses), and a field that
    /// repeats one here reuses its strings: no allocation, copy or UTF-8 check for it.
    private var previous: [HTTP2Header] = []

    /// A HEADERS frame opened a section on `stream`.
    mutating func begin(_ stream: Int32) {
        self.stream = stream
        fields = HTTP2IncomingFields()
    }

    /// Adds one field to the stream's section (none open: ignored); true when this field
    /// crossed `limit`.
    mutating func append(_ stream: Int32, name: UnsafePointer<UInt8>, nameLength: Int, value: UnsafePointer<UInt8>,
                         valueLength: Int, limit: Int) -> Bool {
        guard stream == self.stream else { return false }
        return fields?.append(name: name, nameLength: nameLength, value: value, valueLength: valueLength, limit: limit,
                              previous: previous) ?? false
    }

    /// The stream's section, now complete, and no longer kept (but for its fields' reuse).
    mutating func take(_ stream: Int32) -> HTTP2IncomingFields? {
        guard stream == self.stream, let taken = fields.take() else { return nil }
        if !taken.oversized { previous = taken.headers }
        return taken
    }

    mutating func forget(_ stream: Int32) {
        if stream == self.stream { fields = nil }
    }
}
