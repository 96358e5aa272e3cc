#if canImport(Glibc)
import Glibc
import LookoutModel
#endif
import HTTPTypes
import LookoutAdmin
import LookoutHTTP
import LookoutLogQuery
import LookoutMonitors

/// The live pages of the admin endpoint:
/// - `GET /events?filter=EXPR&verbose=1`: Server-Sent Events, one per log record, resumable with
///   `Last-Event-ID` from the ring;
/// - `GET /exchanges?filter=EXPR&limit=N&before=SEQ`: recent summary records, newest first;
/// - `GET /exchanges?state=in_flight`: the exchanges still running, with their phase so far;
/// - `GET /exchanges/ID`: one exchange's summary and the lifecycle records kept for it;
/// - `GET /exchanges/ID/body/(request|response)`: a captured body, `decoded=1` to undo its coding;
/// - `GET /exchanges.har` and `GET /exchanges.tar.gz`: the filter's exchanges as HAR, or as a
///   recording (log and capture files);
/// - `GET /exchanges/ID/messages`: the messages read inside a WebSocket or stream, one JSON
///   line each (its capture file, or the `ws.message`/`stream.event` records kept in the ring);
/// - `DELETE /exchanges/ID`: cancels a running exchange (`502 cancelled_by_operator`).
public final class LiveEndpoint: AdminEndpoint {
    private let hub: LiveMonitor
    /// `grpc.descriptor_sets`, one after another (together still one FileDescriptorSet: its files
    /// are a repeated field).
    private let descriptorSets: [UInt8]

    public init(monitor: LiveMonitor, descriptorSets: [UInt8] = []) {
        hub = monitor
        self.descriptorSets = descriptorSets
    }

    /// `/exchanges` answers at most this many records at once.
    static let maximumLimit = 1000

    public var statusLine: String? {
        "live: GET /events (Server-Sent Events, \(hub.subscriberTotal) open, \(hub.droppedRecords) records dropped), GET /exchanges (?state=in_flight), DELETE /exchanges/ID, GET /exchanges.har, GET /exchanges.tar.gz"
    }

    public func answer(_ request: AdminRequest) -> AdminAnswer? {
        let path = request.path
        if path == "/grpc/descriptors" { return descriptors(request) }
        guard path == "/events" || path == "/exchanges" || path == "/exchanges.har" || path == "/exchanges.tar.gz"
                || path.hasPrefix("/exchanges/") else {
            return nil
        }
        let parameters = request.parameters
        if path.hasPrefix("/exchanges/"), request.method == .delete {
            let rest = path.dropFirst("/exchanges/".count)
            guard let id = UInt64(rest) else { return Self.error(404, "no such exchange: \(rest)") }
            return cancel(id, request)
        }
        guard request.method == .get || request.method == .head else {
            return Self.error(405, "\(path) answers GET and HEAD only (and DELETE /exchanges/ID)")
        }
        if path == "/events" { return events(request, parameters) }
        if path == "/exchanges.har" { return har(parameters) }
        if path == "/exchanges.tar.gz" { return recording(parameters) }
        if path == "/exchanges" {
            switch parameters["state"] ?? "finished" {
            case "finished": return list(parameters)
            case "in_flight": return inFlight(parameters, request)
            case let state: return Self.error(400, "state must be finished, in_flight or held, got \(state)")
            }
        }
        let rest = path.dropFirst("/exchanges/".count).split(separator: "/", omittingEmptySubsequences: false)
        guard let id = UInt64(rest[0]) else { return Self.error(404, "no such page: \(path)") }
        if rest.count == 3, rest[1] == "body", rest[2] == "request" || rest[2] == "response" {
            return body(id, String(rest[2]), decoded: ["1", "true", "yes"].contains(parameters["decoded"] ?? ""))
        }
        if rest.count == 2, rest[1] == "messages" { return messages(id) }
        guard rest.count == 1 else {
            return Self.error(404, "no such page: \(path) (GET /exchanges/ID/body/request or /response, /exchanges/ID/messages)")
        }
        return exchange(id)
    }

    // MARK: - Pages

    private func events(_ request: AdminRequest, _ parameters: [String: String]) -> AdminAnswer {
        let filter: LogFilter?
        do { filter = try Self.filter(parameters) } catch { return error.answer }
        let resumeFrom = request.headerFields[HTTPField.Name("Last-Event-ID")!] ?? parameters["lastEventId"]
        var lastEventID: UInt64?
        if let resumeFrom {
            guard let sequence = UInt64(resumeFrom.trimmingOWS()) else {
                return Self.error(400, "Last-Event-ID must be a record's sequence number, got \(resumeFrom)")
            }
            lastEventID = sequence
        }
        let verbose = ["1", "true", "yes"].contains(parameters["verbose"] ?? "")
        let subscriber = EventSubscriber(hub: hub, filter: filter, filterText: parameters["filter"] ?? "", verbose: verbose,
                                         lastEventID: lastEventID)
        return AdminAnswer(contentType: "text/event-stream; charset=utf-8", stream: subscriber)
    }

    private func list(_ parameters: [String: String]) -> AdminAnswer {
        let filter: LogFilter?
        do { filter = try Self.filter(parameters) } catch { return error.answer }
        let limit: Int
        do { limit = try Self.limit(parameters) } catch { return error.answer }
        var before: UInt64?
        if let text = parameters["before"] {
            guard let value = UInt64(text) else { return Self.error(400, "before must be a record's sequence number, got \(text)") }
            before = value
        }
        let records = summaries(limit: limit, before: before, filter: filter)
        var body = Array("{\"exchanges\":[".utf8)
        for (index, record) in records.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += record.lineWithSequence
        }
        body += Array("]}\n".utf8)
        return AdminAnswer(contentType: "application/json", body: body)
    }

    /// `GET /exchanges.har?filter=EXPR&limit=N`: the ring's exchanges (the newest `limit`, 10,000 at
    /// most) as HAR 1.2, oldest first, with captured bodies inlined as `lookout log --format har`
    /// does; streamed entry by entry.
    private func har(_ parameters: [String: String]) -> AdminAnswer {
        let records: [LiveRecord]
        do { records = try exported(parameters) } catch { return error.answer }
        var answer = AdminAnswer(contentType: "application/json", stream: PacedStream(HARSource(records: records.reversed(),
                                                                                                version: LookoutVersion.string)))
        answer.headerFields[HTTPField.Name("Content-Disposition")!] = "attachment; filename=\"lookout.har\""
        return answer
    }

    /// `GET /exchanges.tar.gz?filter=EXPR&limit=N`: the same exchanges as a recording — the
    /// summary records as `recording.jsonl` with their capture files beside it, in one gzip'd tar
    /// streamed file by file.
    private func recording(_ parameters: [String: String]) -> AdminAnswer {
        let records: [LiveRecord]
        do { records = try exported(parameters) } catch { return error.answer }
        var archive = RecordingArchive()
        for record in records.reversed() { archive.add(record.line) }
        guard let gzip = GzipWriter() else { return Self.error(503, "cannot start gzip (out of memory)") }
        let source = RecordingArchiveSource(archive: archive, gzip: gzip, now: time(nil))
        var answer = AdminAnswer(contentType: "application/gzip", stream: PacedStream(source))
        answer.headerFields[HTTPField.Name("Content-Disposition")!] = "attachment; filename=\"lookout-recording.tar.gz\""
        return answer
    }

    /// What a download holds: the newest `limit` summaries (the whole ring unless given) that pass
    /// `filter`, newest first.
    private func exported(_ parameters: [String: String]) throws(AnswerError) -> [LiveRecord] {
        let filter = try Self.filter(parameters)
        let limit = try Self.limit(parameters, default: hub.ring.capacity, maximum: hub.ring.capacity)
        return summaries(limit: limit, before: nil, filter: filter)
    }

    /// The exchanges still running, newest first, gathered from every loop.
    private func inFlight(_ parameters: [String: String], _ request: AdminRequest) -> AdminAnswer {
        let filter: LogFilter?
        do { filter = try Self.filter(parameters) } catch { return error.answer }
        let limit: Int
        do { limit = try Self.limit(parameters) } catch { return error.answer }
        guard let session = request.exchanges else { return Self.error(503, "no session to ask") }
        return AdminAnswer { reply in
            session.inFlightExchanges { running in
                var encoder = LogLineEncoder()
                var body = Array("{\"exchanges\":[".utf8)
                var listed = 0
                for exchange in running.sorted(by: { $0.summary.requestID > $1.summary.requestID }) {
                    guard listed < limit else { break }
                    let line = encoder.inFlightRecord(exchange)
                    guard Self.passes(line, filter) else { continue }
                    if listed > 0 { body.append(UInt8(ascii: ",")) }
                    body += line
                    listed += 1
                }
                body += Array("]}\n".utf8)
                reply(AdminAnswer(contentType: "application/json", body: body))
            }
        }
    }

    /// `DELETE /exchanges/ID`: cancels a running exchange or tunnel.
    private func cancel(_ id: UInt64, _ request: AdminRequest) -> AdminAnswer {
        guard let session = request.exchanges else { return Self.error(503, "no session to ask") }
        let operatorAddress = request.clientAddress
        return AdminAnswer { reply in
            session.cancelExchange(id: id, operatorAddress: operatorAddress) { found in
                guard found else {
                    reply(Self.error(404, "exchange \(id) is not running (GET /exchanges?state=in_flight lists those that are)"))
                    return
                }
                let body = "{\"cancelled\":\(id),\"by\":\(JSONText.quoted(operatorAddress))}\n"
                reply(AdminAnswer(contentType: "application/json", body: Array(body.utf8)))
            }
        }
    }

    /// The largest captured body decoded here (`?decoded=1`): decoding is done in memory.
    static let maximumDecodedBytes = 16 << 20

    /// `GET /exchanges/ID/body/(request|response)`: the captured body as it was received, streamed
    /// from its file; with `decoded=1` its content coding (gzip, deflate, br) undone.
    private func body(_ id: UInt64, _ which: String, decoded: Bool) -> AdminAnswer {
        guard let summary = hub.ring.newest(limit: 1, before: nil, where: { $0.exchangeID == id && $0.kind == .exchange }).first
        else {
            return Self.error(404, "exchange \(id) is not among the last \(hub.ring.capacity) records (ui.ring_size)")
        }
        let found: (path: String, headers: [(String, String)], truncated: Bool)? = summary.line.withUnsafeBufferPointer {
            guard let record = LogRecord($0), let path = record.string("capture", which) else { return nil }
            return (path, record.stringMembers("\(which)_headers"), record.bool("capture", "truncated") ?? false)
        }
        guard let found else {
            return Self.error(404, "exchange \(id) has no captured \(which) body (capture.rules decide what is kept)")
        }
        let fd = open(found.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            return Self.error(410, "the captured \(which) body of exchange \(id) is gone: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            close(fd)
            return Self.error(500, "cannot read \(found.path): \(String(cString: strerror(errno)))")
        }
        let length = UInt64(info.st_size)
        let contentType = found.headers.first { $0.0 == "content-type" }?.1 ?? "application/octet-stream"
        let coding = found.headers.first { $0.0 == "content-encoding" }?.1
        let isEncoded = coding.map { !$0.isEmpty && $0.lowercased() != "identity" } ?? false
        // A captured page must never run as the admin origin's own: no sniffing, no scripts.
        var fields = HTTPFields()
        fields[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        fields[HTTPField.Name("Content-Security-Policy")!] = "sandbox; default-src 'none'"
        if found.truncated { fields[HTTPField.Name("X-Lookout-Capture-Truncated")!] = "true" }
        if decoded && isEncoded {
            defer { close(fd) }
            guard length <= UInt64(Self.maximumDecodedBytes) else {
                return Self.error(413, "the captured body is over \(Self.maximumDecodedBytes) bytes: fetch it without decoded=1")
            }
            var raw = [UInt8](repeating: 0, count: Int(length))
            var offset = 0
            while offset < raw.count {
                let n = raw[offset...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                offset += n
            }
            raw.removeLast(raw.count - offset)
            switch ContentDecoding.decode(raw, contentEncoding: coding, limit: Self.maximumDecodedBytes) {
            case .decoded(let bytes):
                var answer = AdminAnswer(contentType: contentType, body: bytes)
                answer.headerFields = fields
                return answer
            case .unsupported(let name):
                return Self.error(415, "content coding \(name) is not decoded here: fetch the body without decoded=1")
            case .corrupt(let name):
                return Self.error(422, "the captured \(name) body does not decode (truncated: \(found.truncated))")
            case .tooLarge:
                return Self.error(413, "the decoded body is over \(Self.maximumDecodedBytes) bytes: fetch it without decoded=1")
            }
        }
        if let coding, isEncoded { fields[HTTPField.Name("X-Lookout-Content-Encoding")!] = coding }
        var answer = AdminAnswer(contentType: isEncoded ? "application/octet-stream" : contentType,
                                 stream: PacedStream(CapturedBodySource(fd: fd, length: length)), length: length)
        answer.headerFields = fields
        return answer
    }

    /// `GET /exchanges/ID/messages`: the captured `<id>.messages.jsonl` when the exchange has
    /// finished with one; otherwise its `ws.message` and `stream.event` records from the ring
    /// (kept while lifecycle records are asked for). NDJSON either way.
    private func messages(_ id: UInt64) -> AdminAnswer {
        let records = hub.ring.records(exchange: id)
        let file = records.last(where: { $0.kind == .exchange }).flatMap { summary in
            summary.line.withUnsafeBufferPointer { LogRecord($0)?.string("capture", "messages") }
        }
        if let file {
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            var info = stat()
            if fd >= 0, fstat(fd, &info) == 0 {
                var answer = AdminAnswer(contentType: "application/x-ndjson",
                                         stream: PacedStream(CapturedBodySource(fd: fd, length: UInt64(info.st_size))),
                                         length: UInt64(info.st_size))
                answer.headerFields[HTTPField.Name("X-Lookout-Messages")!] = "capture"
                return answer
            }
            if fd >= 0 { close(fd) }
        }
        var body: [UInt8] = []
        for record in records where record.kind == .lifecycle {
            let isMessage = record.line.withUnsafeBufferPointer { line in
                LogRecord(line).map { ["ws.message", "stream.event"].contains($0.string("event") ?? "") } ?? false
            }
            guard isMessage else { continue }
            body += record.line
            body.append(UInt8(ascii: "\n"))
        }
        var answer = AdminAnswer(contentType: "application/x-ndjson", body: body)
        answer.headerFields[HTTPField.Name("X-Lookout-Messages")!] = "events"
        return answer
    }

    /// `GET /grpc/descriptors`: the descriptor sets, for the UI to name gRPC fields and methods.
    private func descriptors(_ request: AdminRequest) -> AdminAnswer {
        guard request.method == .get || request.method == .head else { return Self.error(405, "/grpc/descriptors answers GET and HEAD only") }
        guard !descriptorSets.isEmpty else { return Self.error(404, "no grpc.descriptor_sets are configured") }
        return AdminAnswer(contentType: "application/x-protobuf", body: descriptorSets)
    }

    private func exchange(_ id: UInt64) -> AdminAnswer {
        let records = hub.ring.records(exchange: id)
        guard let summary = records.last(where: { $0.kind == .exchange }) else {
            return Self.error(404, "exchange \(id) is not among the last \(hub.ring.capacity) records (ui.ring_size)")
        }
        var body = Array("{\"exchange\":".utf8) + summary.lineWithSequence + Array(",\"events\":[".utf8)
        for (index, record) in records.filter({ $0.kind != .exchange }).enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += record.lineWithSequence
        }
        body += Array("]}\n".utf8)
        return AdminAnswer(contentType: "application/json", body: body)
    }

    // MARK: - Helpers

    /// The `filter` parameter parsed; a bad one is answered with its message and column.
    private static func filter(_ parameters: [String: String]) throws(AnswerError) -> LogFilter? {
        guard let text = parameters["filter"], !text.allSatisfy({ $0 == " " }) else { return nil }
        do {
            return try LogFilter.parse(text)
        } catch {
            let body = "{\"error\":\(JSONText.quoted("filter: \(error.message)")),\"column\":\(error.column)}\n"
            throw AnswerError(answer: AdminAnswer(status: 400, contentType: "application/json", body: Array(body.utf8)))
        }
    }

    /// The `limit` parameter: `default` unless given, at most `maximum`.
    private static func limit(_ parameters: [String: String], default defaultLimit: Int = 100,
                              maximum: Int = maximumLimit) throws(AnswerError) -> Int {
        guard let text = parameters["limit"] else { return defaultLimit }
        guard let value = Int(text), value >= 1 else {
            throw AnswerError(answer: error(400, "limit must be a positive number, got \(text)"))
        }
        return min(value, maximum)
    }

    /// The ring's summary records that pass `filter`, newest first.
    private func summaries(limit: Int, before: UInt64?, filter: LogFilter?) -> [LiveRecord] {
        hub.ring.newest(limit: limit, before: before) { $0.kind == .exchange && Self.passes($0.line, filter) }
    }

    /// Whether a record's JSON passes `filter` (every record passes no filter).
    private static func passes(_ line: [UInt8], _ filter: LogFilter?) -> Bool {
        guard let filter else { return true }
        return line.withUnsafeBufferPointer { LogRecord($0).map(filter.matches) ?? false }
    }

    /// An answer that ends a page early (a bad parameter).
    struct AnswerError: Error {
        let answer: AdminAnswer
    }

    private static func error(_ status: Int, _ message: String) -> AdminAnswer {
        AdminAnswer(status: status, contentType: "application/json",
                    body: Array("{\"error\":\(JSONText.quoted(message))}\n".utf8))
    }
}
