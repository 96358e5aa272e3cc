#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import LookoutModel
import Synchronization

/// Where the JSON-lines log goes (config `log.path`: `"-"` is standard output).
public enum LogDestination: Sendable, Equatable {
    case standardOutput
    /// A file opened for appending (created with mode 0640, less the umask) and reopened by
    /// `JSONLinesLogMonitor.reopen()` after rotation.
    case file(path: String)

    /// `"-"` means standard output, anything else a file path.
    public init(configPath: String) {
        self = configPath == "-" ? .standardOutput : .file(path: configPath)
    }
}

/// Failures of the JSON-lines log.
public enum JSONLinesLogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `open(2)` failed.
    case cannotOpen(path: String, errno: Int32)
    /// `write(2)` failed; the records of that write were dropped.
    case writeFailed(destination: String, errno: Int32, droppedRecords: Int)

    public var description: String {
        switch self {
        case let .cannotOpen(path, code):
            return "cannot open log file \(path): \(Self.describe(code))"
        case let .writeFailed(destination, code, dropped):
            return "cannot write to log \(destination): \(Self.describe(code)) (\(dropped) records dropped)"
        }
    }

    private static func describe(_ code: Int32) -> String {
        code == 0 ? "short write" : String(cString: strerror(code))
    }
}

/// Writes the JSON-lines traffic log (every record and field: `LOG.md` beside this file): one `"exchange"` summary per finished exchange,
/// `session.*` and `connection.wasRejected` records, and in verbose mode one record per
/// lifecycle event as well.
///
/// Records are encoded by hand into a reusable buffer. Everything received while the monitor's
/// `queue` is busy (one `CompositeEventMonitor` mailbox drain) is written with one `write(2)`
/// when the queue next runs, or as soon as 64 KiB are pending; `session.*` records are written
/// at once. Only whole lines are ever handed to the kernel and partial writes are retried until
/// the buffer is out, so a crash or SIGTERM can lose the newest buffered records but never leaves
/// a torn line.
///
/// `receive(_:)` must be called on `queue` (as `CompositeEventMonitor` does).
public final class JSONLinesLogMonitor: EventMonitor, @unchecked Sendable {
    // Mutable state below is confined to `queue`; the counters are atomics.

    public let queue: DispatchQueue
    public let interest: EventInterest
    public let destination: LogDestination
    public let verbose: Bool
    public let revealSecrets: Bool
    public let includeHeaders: Bool
    /// Takes summary records another monitor with the same options encoded, and offers its own
    /// (`FinishedExchange.share`): with the live view on, each summary is encoded once for both.
    public let sharesSummaryRecords: Bool

    /// Records successfully handed to the kernel.
    public var recordsWritten: UInt64 { written.load(ordering: .relaxed) }
    /// Failed `write(2)` calls and failed reopens.
    public var writeErrors: UInt64 { errors.load(ordering: .relaxed) }
    /// Records lost because a write failed.
    public var recordsDropped: UInt64 { dropped.load(ordering: .relaxed) }

    /// Pending bytes that trigger an immediate write.
    static let writeThreshold = 64 * 1024

    private let options: LogRecordOptions
    private let onError: (@Sendable (JSONLinesLogError) -> Void)?
    private let written = Atomic<UInt64>(0)
    private let errors = Atomic<UInt64>(0)
    private let dropped = Atomic<UInt64>(0)
    private let onQueueKey = DispatchSpecificKey<Bool>()

    // Confined to `queue`.
    private var fd: Int32
    private var buffer = JSONBuffer(capacity: JSONLinesLogMonitor.writeThreshold + 4096)
    private var pendingRecords = 0
    private var writeScheduled = false
    /// A failed write left an unterminated line in the file; start the next write with "\n".
    private var midLine = false
    /// The last write failed (errors are reported to `onError` once per failure streak).
    private var failing = false
    /// Writes the file back behind the records and drops it from the page cache.
    private var writeBehind: LogWriteBehind

    /// Opens the destination. Throws `JSONLinesLogError.cannotOpen` when the file cannot be opened.
    ///
    /// - Parameters:
    ///   - verbose: every lifecycle event too (`interest` `.all`), not only summaries (`.summaries`).
    ///   - revealSecrets: write Authorization, Proxy-Authorization, Cookie, Set-Cookie values and
    ///     URL passwords instead of `"[redacted]"`.
    ///   - includeHeaders: add `request_headers` / `response_headers` to summary records.
    ///   - sharesSummaryRecords: see the property; only worth it when another monitor writes the
    ///     same records.
    ///   - writeBehindWindow: how much of a log file may sit in the page cache before it is
    ///     written back and dropped, in two windows (`LogWriteBehind`); whole pages.
    ///   - onError: told, on `queue`, about a failed reopen and about the first failed write of
    ///     each streak of failures (e.g. to log it on stderr).
    public init(destination: LogDestination, verbose: Bool, revealSecrets: Bool, includeHeaders: Bool,
                sharesSummaryRecords: Bool = false,
                writeBehindWindow: Int = LogWriteBehind.defaultWindow,
                queue: DispatchQueue = DispatchQueue(label: "lookout.monitor.jsonlines", qos: .utility),
                onError: (@Sendable (JSONLinesLogError) -> Void)? = nil) throws {
        self.destination = destination
        self.verbose = verbose
        self.revealSecrets = revealSecrets
        self.includeHeaders = includeHeaders
        self.sharesSummaryRecords = sharesSummaryRecords
        self.interest = verbose ? .all : .summaries
        self.options = LogRecordOptions(revealSecrets: revealSecrets, includeHeaders: includeHeaders)
        self.onError = onError
        self.queue = queue
        switch destination {
        case .standardOutput:
            fd = STDOUT_FILENO
        case .file(let path):
            fd = try Self.openLog(path)
        }
        writeBehind = LogWriteBehind(window: writeBehindWindow)
        writeBehind.attach(to: fd)
        queue.setSpecific(key: onQueueKey, value: true)
    }

    deinit {
        // No queued block can still reference `self` here.
        writePending()
        if case .file = destination { _ = close(fd) }
    }

    // MARK: Receiving

    public func receive(_ event: LookoutEvent) {
        let options = self.options
        let finished = sharesSummaryRecords ? event.finishedExchange : nil
        let shared = finished?.sharedRecord(format: options.sharedRecordFormat)
        let wroteSummary = event.withSummary { (summary: borrowing ExchangeSummary) -> Void in
            if verbose { buffer.appendEventRecord(event, options: options); pendingRecords += 1 }
            if let shared {
                buffer.appendLine(encoded: shared)
            } else {
                let start = buffer.count
                buffer.appendSummaryRecord(summary, options: options)
                finished?.share(record: buffer.line(from: start), format: options.sharedRecordFormat)
            }
            pendingRecords += 1
        } != nil
        if !wroteSummary {
            if event.interest.contains(.summaries) && event.name.hasPrefix("session.") {
                // session.*: rare, and at shutdown there may be no later turn of the queue.
                buffer.appendEventRecord(event, options: options)
                pendingRecords += 1
                writePending()
                return
            }
            // Verbose mode writes everything; default mode the other summary-interest kinds too
            // (`connection.wasRejected`: not an exchange, but an operator must see refusals).
            guard verbose || event.interest.contains(.summaries) else { return }
            buffer.appendEventRecord(event, options: options)
            pendingRecords += 1
        }
        if buffer.count >= Self.writeThreshold {
            writePending()
        } else if !writeScheduled {
            // Runs after the current mailbox drain: the whole batch goes out in one write.
            writeScheduled = true
            queue.async { [self] in
                writeScheduled = false
                writePending()
            }
        }
    }

    // MARK: Control

    /// Blocks until every record received so far has been written (no fsync). Safe to call on
    /// `queue` too. To flush events still in a `CompositeEventMonitor` mailbox, call the
    /// composite's `flush()` first.
    public func flush() {
        if DispatchQueue.getSpecific(key: onQueueKey) == true {
            writePending()
        } else {
            queue.sync { writePending() }
        }
    }

    /// For log rotation (SIGHUP): on `queue`, writes what is pending to the current file, then
    /// closes it and opens `path` again (creating it). If the open fails the old file stays in use
    /// and the error is counted in `writeErrors`, reported to `onError` and to `completion`.
    /// A no-op for standard output. Returns at once; `flush()` afterwards waits for it.
    public func reopen(completion: (@Sendable (Result<Void, JSONLinesLogError>) -> Void)? = nil) {
        queue.async { [self] in
            let result = reopenNow()
            completion?(result)
        }
    }

    private func reopenNow() -> Result<Void, JSONLinesLogError> {
        writePending()
        guard case .file(let path) = destination else { return .success(()) }
        let newFD: Int32
        do {
            newFD = try Self.openLog(path)
        } catch {
            errors.add(1, ordering: .relaxed)
            onError?(error)
            return .failure(error)
        }
        _ = close(fd)
        fd = newFD
        writeBehind.attach(to: fd)
        // A torn line from a failed write stays behind in the old file unless this is still it.
        if midLine {
            var st = stat()
            if fstat(fd, &st) == 0 && st.st_size == 0 { midLine = false }
        }
        return .success(())
    }

    // MARK: Writing

    private static func openLog(_ path: String) throws(JSONLinesLogError) -> Int32 {
        while true {
            let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
            if fd >= 0 { return fd }
            let code = errno
            if code == EINTR { continue }
            throw JSONLinesLogError.cannotOpen(path: path, errno: code)
        }
    }

    private var destinationName: String {
        switch destination {
        case .standardOutput: return "stdout"
        case .file(let path): return path
        }
    }

    /// Writes the pending records (whole lines) and empties the buffer.
    private func writePending() {
        guard pendingRecords > 0 else { return }
        let records = pendingRecords
        pendingRecords = 0
        defer { buffer.removeAll() }

        if midLine {
            var newline = UInt8(ascii: "\n")
            let (n, _) = withUnsafeBytes(of: &newline) { writeFully($0) }
            if n == 1 { midLine = false }
        }
        let (count, code) = writeFully(buffer.bytes)
        if count == buffer.count {
            written.add(UInt64(records), ordering: .relaxed)
            failing = false
            writeBehind.didWrite(to: fd)
            return
        }
        // Failed part-way: lines fully written count as written; the rest are dropped.
        let done = buffer.bytes[..<count]
        let complete = done.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        if let last = done.last, last != UInt8(ascii: "\n") { midLine = true }
        written.add(UInt64(complete), ordering: .relaxed)
        dropped.add(UInt64(records - complete), ordering: .relaxed)
        errors.add(1, ordering: .relaxed)
        if !failing {
            failing = true
            onError?(.writeFailed(destination: destinationName, errno: code, droppedRecords: records - complete))
        }
    }

    /// Loops on partial writes, EINTR and EAGAIN (a non-blocking stdout) until `bytes` are out or a
    /// real error happens. Returns the number of bytes written and the errno of the failure.
    private func writeFully(_ bytes: UnsafeRawBufferPointer) -> (Int, Int32) {
        guard let base = bytes.baseAddress else { return (0, 0) }
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, base + offset, min(bytes.count - offset, 1 << 30))
            if n > 0 {
                offset += n
                continue
            }
            if n == 0 { return (offset, 0) }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pfd, 1, 1000)
                continue
            }
            return (offset, code)
        }
        return (offset, 0)
    }
}
