import Foundation
import Logging
import LookoutMessages
import LookoutTLS
import LookoutModel
import Synchronization

/// Sends spans and log records to the Collector from a thread of its own — never from the event
/// loops, never holding up traffic. Records arrive encoded (`OTLPRecordEncoder`, on the monitor's
/// queue) and wait in bounded queues (`batch.max_queue` each, `EncodedQueue`); a
/// full queue drops what comes and counts it. Batches of at most `batch.max_records` leave when
/// full or `batch.max_delay_ms` after their first record; a refused or failed export is retried
/// with exponential backoff (1 s doubling to 30 s, or the Collector's `Retry-After`) on 429, 502,
/// 503, 504 and connection failures, as the OTLP specification says, while new records queue.
///
/// `@unchecked Sendable`: the queues and flags are guarded by `condition`; the counters are atomic.
public final class OTLPExporter: @unchecked Sendable {
    public enum Signal: String, Sendable { case traces, logs }

    private let settings: OTelSettings
    private let endpoint: OTLPEndpoint
    private let logger: Logger
    private let condition = NSCondition()
    private var spans: EncodedQueue
    private var logs: EncodedQueue
    private var stopping = false
    private var flushDeadline: UInt64?
    private var busy = false
    /// The last time each kind of problem was written to stderr (once a minute at most).
    private var lastReported: [String: UInt64] = [:]
    /// What every request carries before its records: the resource and the scope, encoded once.
    private let resourceAndScope: OTLPProtobuf.ResourceAndScope
    private let jsonPrefix: (traces: [UInt8], logs: [UInt8])
    /// `compression: gzip`; used on the exporter's thread only.
    private let gzip: BatchGzip?
    /// The exporter thread's connection to the Collector (through TLS for an https endpoint),
    /// kept from batch to batch.
    private let poster: OTLPPoster

    public let droppedSpans = Atomic<UInt64>(0)
    public let droppedLogs = Atomic<UInt64>(0)
    public let exportedSpans = Atomic<UInt64>(0)
    public let exportedLogs = Atomic<UInt64>(0)
    /// Records the Collector said it rejected (a partial success).
    public let rejected = Atomic<UInt64>(0)

    /// `trust`: how an https Collector's certificate is judged (nil: an https endpoint fails).
    public init?(settings: OTelSettings, logger: Logger, trust: DefaultTrustEvaluator? = nil) {
        guard let endpoint = OTLPEndpoint(settings.endpoint) else { return nil }
        var tls: (engine: TLSEngine, evaluator: DefaultTrustEvaluator)?
        if endpoint.isSecure, let trust, let engine = try? TLSEngine(configuration: .client(applicationProtocols: ["http/1.1"])) {
            tls = (engine, trust)
        }
        self.settings = settings
        self.endpoint = endpoint
        gzip = settings.gzip ? BatchGzip() : nil
        poster = OTLPPoster(endpoint: endpoint, headers: settings.headers, timeoutMilliseconds: settings.timeoutMilliseconds, tls: tls)
        self.logger = logger
        let separator: [UInt8] = settings.wireProtocol == .json ? [UInt8(ascii: ",")] : []
        spans = EncodedQueue(maxRecords: settings.maxBatchRecords, maxQueue: settings.maxQueue, separator: separator)
        logs = EncodedQueue(maxRecords: settings.maxBatchRecords, maxQueue: settings.maxQueue, separator: separator)
        let scope = ("lookout", LookoutVersion.string)
        resourceAndScope = OTLPProtobuf.ResourceAndScope(resource: settings.resource, scope: scope)
        jsonPrefix = (Array(OTLPJSON.requestPrefix(traces: true, resource: settings.resource, scope: scope).utf8),
                      Array(OTLPJSON.requestPrefix(traces: false, resource: settings.resource, scope: scope).utf8))
        let thread = Thread { [self] in run() }
        thread.name = "lookout.otel"
        thread.start()
    }

    // MARK: - From the monitor

    /// Records of `signal`, encoded: `ends` says where each ends in `bytes`. A full queue drops
    /// and counts what does not fit.
    func enqueue(_ signal: Signal, _ bytes: UnsafeRawBufferPointer, ends: [Int]) {
        condition.lock()
        let dropped: Int
        let full: Bool
        if signal == .traces {
            dropped = spans.append(bytes, ends: ends, now: Instant.now().nanoseconds)
            full = spans.hasFullBatch
        } else {
            dropped = logs.append(bytes, ends: ends, now: Instant.now().nanoseconds)
            full = logs.hasFullBatch
        }
        if full { condition.signal() }
        condition.unlock()
        if dropped > 0 { self.dropped(signal, dropped) }
    }

    /// Sends what is queued, waiting up to `timeout_ms` (SIGTERM). What is left then is dropped.
    public func flush() {
        let deadline = Instant.now().nanoseconds + UInt64(settings.timeoutMilliseconds) * 1_000_000
        condition.lock()
        flushDeadline = deadline
        condition.broadcast()
        while (!spans.isEmpty || !logs.isEmpty || busy) && Instant.now().nanoseconds < deadline {
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    // MARK: - The exporter's thread

    private func run() {
        while true {
            condition.lock()
            while !stopping && !due() {
                let wait = nextWake()
                _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
            }
            if stopping && spans.isEmpty && logs.isEmpty {
                condition.unlock()
                return
            }
            var spanBatch = spans.takeFirst()
            var logBatch = logs.takeFirst()
            busy = true
            condition.unlock()
            send(.traces, &spanBatch)
            send(.logs, &logBatch)
            condition.lock()
            busy = false
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Exports `taken`, then gives its storage back to the queue for a later batch.
    /// The batch is moved out of `taken`, so its storage is not shared when it is given back
    /// (shared storage would be copied, not reused).
    private func send(_ signal: Signal, _ taken: inout EncodedQueue.Batch?) {
        guard var batch = taken.take() else { return }
        export(signal, count: batch.count, records: batch.bytes)
        condition.lock()
        if signal == .traces { spans.recycle(&batch.bytes) } else { logs.recycle(&batch.bytes) }
        condition.unlock()
    }

    /// A batch is full, or its first record has waited `max_delay_ms`, or a flush asks (under the lock).
    private func due() -> Bool {
        if spans.hasFullBatch || logs.hasFullBatch { return true }
        if flushDeadline != nil && (!spans.isEmpty || !logs.isEmpty) { return true }
        let limit = UInt64(settings.maxDelayMilliseconds) * 1_000_000
        let now = Instant.now().nanoseconds
        return [spans.oldest, logs.oldest].contains { $0.map { now - $0 >= limit } ?? false }
    }

    private func nextWake() -> TimeInterval {
        let first = [spans.oldest, logs.oldest].compactMap { $0 }.min()
        guard let first else { return 1 }
        let due = first + UInt64(settings.maxDelayMilliseconds) * 1_000_000
        let now = Instant.now().nanoseconds
        return due > now ? Double(due - now) / 1e9 : 0.001
    }

    /// One batch as a request: the prefix (resource and scope) and the records as they lie,
    /// compressed from there or sent in parts; the batch is never copied into a request first.
    private func export(_ signal: Signal, count: Int, records: [UInt8]) {
        let json = settings.wireProtocol == .json
        let prefix = json ? (signal == .traces ? jsonPrefix.traces : jsonPrefix.logs)
            : OTLPProtobuf.requestPrefix(recordsLength: records.count, resourceAndScope: resourceAndScope)
        // OTLP/JSON's records close the arrays and objects the prefix opened.
        let body = json ? records + OTLPJSON.requestSuffix.utf8 : records
        if let gzip, gzip.compress(prefix, body, { deliver(signal, count: count, gzip: true, [$0]) }) != nil { return }
        // Sent as it is (and without Content-Encoding) when compression is off or igzip fails.
        prefix.withUnsafeBytes { head in
            body.withUnsafeBytes { rest in deliver(signal, count: count, gzip: false, [head, rest]) }
        }
    }

    /// Posts `body` until it is taken, refused for good, or a flush's deadline passes.
    private func deliver(_ signal: Signal, count: Int, gzip: Bool, _ body: [UnsafeRawBufferPointer]) {
        let contentType = settings.wireProtocol == .json ? "application/json" : "application/x-protobuf"
        var backoff = 1.0
        while true {
            let wait: Double
            switch poster.post(path: endpoint.path(for: signal.rawValue), contentType: contentType, gzip: gzip, body: body) {
            case .success(let answer) where (200..<300).contains(answer.status):
                counted(signal, exported: count, answer: answer)
                return
            case .success(let answer) where [429, 502, 503, 504].contains(answer.status):
                report("status \(answer.status)", "the Collector answered \(answer.status) to \(signal.rawValue); retrying")
                wait = answer.retryAfter ?? backoff
            case .success(let answer):
                report("status \(answer.status)", "the Collector refused \(count) \(signal.rawValue) records with \(answer.status): "
                       + String(decoding: answer.body.prefix(300), as: UTF8.self))
                dropped(signal, count)
                return
            case .failure(let failure):
                report("failure", "cannot export \(signal.rawValue) to \(settings.endpoint): \(failure); retrying")
                wait = backoff
            }
            backoff = min(backoff * 2, 30)
            guard sleep(seconds: wait) else {
                dropped(signal, count)
                return
            }
        }
    }

    /// Sleeps `seconds`, or less when a flush's deadline would pass first; false when it has passed.
    private func sleep(seconds: Double) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let end = Instant.now().nanoseconds + UInt64(seconds * 1e9)
        while Instant.now().nanoseconds < end {
            if let deadline = flushDeadline, Instant.now().nanoseconds >= deadline { return false }
            if stopping { return false }
            let until = min(end, flushDeadline ?? end)
            _ = condition.wait(until: Date(timeIntervalSinceNow: Double(until - min(until, Instant.now().nanoseconds)) / 1e9 + 0.001))
        }
        return !(flushDeadline.map { Instant.now().nanoseconds >= $0 } ?? false)
    }

    private func counted(_ signal: Signal, exported count: Int, answer: OTLPPoster.Answer) {
        let refused = Self.rejectedCount(answer.body, json: settings.wireProtocol == .json)
        if refused > 0 {
            rejected.add(UInt64(refused), ordering: .relaxed)
            report("partial", "the Collector rejected \(refused) of \(count) \(signal.rawValue) records")
        }
        let taken = UInt64(count - min(count, refused))
        if signal == .traces { exportedSpans.add(taken, ordering: .relaxed) } else { exportedLogs.add(taken, ordering: .relaxed) }
    }

    private func dropped(_ signal: Signal, _ count: Int) {
        if signal == .traces { droppedSpans.add(UInt64(count), ordering: .relaxed) } else { droppedLogs.add(UInt64(count), ordering: .relaxed) }
    }

    /// A partial success's rejected count (`partial_success.rejected_spans` / `rejected_log_records`, field 1 of field 1).
    static func rejectedCount(_ body: [UInt8], json: Bool) -> Int {
        guard !body.isEmpty else { return 0 }
        if json {
            let text = String(decoding: body, as: UTF8.self)
            for key in ["\"rejectedSpans\"", "\"rejectedLogRecords\""] {
                guard let range = text.range(of: key) else { continue }
                let digits = text[range.upperBound...].drop { !$0.isNumber }.prefix { $0.isNumber }
                return Int(digits) ?? 0
            }
            return 0
        }
        var reader = ProtobufWireReader(body[...])
        while let (field, value) = reader.next() {
            guard field == 1, case .bytes(let partial) = value else { continue }
            var inner = ProtobufWireReader(partial)
            while let (innerField, innerValue) = inner.next() {
                if innerField == 1, case .number(let count) = innerValue { return Int(truncatingIfNeeded: count) }
            }
        }
        return 0
    }

    /// Writes a problem to stderr at most once a minute per kind.
    private func report(_ kind: String, _ message: String) {
        let now = Instant.now().nanoseconds
        if let last = lastReported[kind], now - last < 60_000_000_000 { return }
        lastReported[kind] = now
        logger.warning("otel: \(message)")
    }
}
