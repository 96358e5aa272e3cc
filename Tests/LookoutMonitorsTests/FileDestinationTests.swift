import Foundation
@testable import LookoutModel
import LookoutMonitors
import Synchronization
import Testing

@Suite struct FileDestinationTests {
    private func summary(id: UInt64, url: String = "http://127.0.0.1:9000/x") -> LookoutEvent {
        var s = ExchangeSummary(requestID: id, connectionID: 1, clientAddress: "127.0.0.1:5", kind: .http,
                                method: "GET", url: url, httpVersion: "HTTP/1.1", start: .now())
        s.end = .now()
        s.status = 200
        return LookoutEvent(EventContext(connectionID: 1, requestID: id), RequestDidFinish(summary: s))
    }

    @Test func appendsToAnExistingFileWithMode0640() throws {
        let path = temporaryLogPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "existing line\n".write(toFile: path, atomically: false, encoding: .utf8)
        let (monitor, _) = try makeMonitor(path: path)
        let lines = try deliver([summary(id: 1)], to: monitor, path: path)
        #expect(lines.count == 2)
        #expect(lines[0] == "existing line")
        #expect(try parseJSON(lines[1])["id"] as? Int == 1)

        let fresh = temporaryLogPath()
        defer { try? FileManager.default.removeItem(atPath: fresh) }
        let old = umask(0o022)
        defer { umask(old) }
        _ = try makeMonitor(path: fresh)
        let attributes = try FileManager.default.attributesOfItem(atPath: fresh)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o640)
    }

    @Test func reopenAfterRotationWritesToTheNewFile() throws {
        let path = temporaryLogPath()
        let rotated = path + ".1"
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: rotated)
        }
        let (monitor, _) = try makeMonitor(path: path)
        _ = try deliver([summary(id: 1)], to: monitor, path: path)
        try FileManager.default.moveItem(atPath: path, toPath: rotated)
        // Still pending when the rotation happens: goes to the old file, before the reopen.
        monitor.queue.sync { monitor.receive(summary(id: 2)) }
        let result = Mutex<Result<Void, JSONLinesLogError>?>(nil)
        monitor.reopen { r in result.withLock { $0 = r } }
        monitor.queue.sync { monitor.receive(summary(id: 3)) }
        monitor.flush()
        #expect(result.withLock { if case .success = $0 { true } else { false } })
        #expect(try readLines(rotated).map { try parseJSON($0)["id"] as? Int } == [1, 2])
        #expect(try readLines(path).map { try parseJSON($0)["id"] as? Int } == [3])
        #expect(monitor.recordsWritten == 3)
        #expect(monitor.writeErrors == 0)
    }

    @Test func failedReopenKeepsTheOldFile() throws {
        let directory = testDirectory + "/dir-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/log.jsonl"
        let moved = testDirectory + "/moved-\(UUID().uuidString).jsonl"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: moved)
        }
        let reported = Mutex<[JSONLinesLogError]>([])
        let monitor = try JSONLinesLogMonitor(destination: .file(path: path), verbose: false, revealSecrets: false,
                                              includeHeaders: false, onError: { e in reported.withLock { $0.append(e) } })
        try FileManager.default.moveItem(atPath: path, toPath: moved)
        try FileManager.default.removeItem(atPath: directory)
        monitor.reopen()
        monitor.queue.sync { monitor.receive(summary(id: 1)) }
        monitor.flush()
        #expect(monitor.writeErrors == 1)
        #expect(reported.withLock { $0 } == [.cannotOpen(path: path, errno: ENOENT)])
        #expect(try readLines(moved).count == 1)
    }

    @Test func openFailureThrows() {
        let path = "/nonexistent-\(UUID().uuidString)/log.jsonl"
        #expect(throws: JSONLinesLogError.cannotOpen(path: path, errno: ENOENT)) {
            _ = try JSONLinesLogMonitor(destination: .file(path: path), verbose: false, revealSecrets: false,
                                        includeHeaders: false)
        }
    }

    @Test func writeErrorsAreCountedAndReportedOnce() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let reported = Mutex<[JSONLinesLogError]>([])
        let monitor = try JSONLinesLogMonitor(destination: .file(path: "/dev/full"), verbose: false, revealSecrets: false,
                                              includeHeaders: false, onError: { e in reported.withLock { $0.append(e) } })
        monitor.queue.sync {
            monitor.receive(summary(id: 1))
            monitor.receive(summary(id: 2))
        }
        monitor.flush()
        monitor.queue.sync { monitor.receive(summary(id: 3)) }
        monitor.flush()
        #expect(monitor.writeErrors == 2)
        #expect(monitor.recordsWritten == 0)
        #expect(monitor.recordsDropped == 3)
        #expect(reported.withLock { $0 } == [.writeFailed(destination: "/dev/full", errno: ENOSPC, droppedRecords: 2)])
    }

    @Test func deinitWritesWhatIsPending() throws {
        let path = temporaryLogPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let (monitor, _) = try makeMonitor(path: path)
            monitor.queue.sync { monitor.receive(summary(id: 1)) }
        }
        // The scheduled write may still hold the monitor; once it ran, deinit closed the file.
        var lines: [String] = []
        for _ in 0..<200 {
            lines = try readLines(path)
            if !lines.isEmpty { break }
            usleep(5_000)
        }
        #expect(lines.count == 1)
    }

    /// Many threads post through a `CompositeEventMonitor` while one of them rotates the file twice: every
    /// line of every file is one whole record, no record is lost, and each thread's records keep
    /// their order.
    @Test func concurrentPostsNeverTearOrInterleaveLines() throws {
        let path = temporaryLogPath()
        let rotations = [path + ".1", path + ".2"]
        defer { for p in [path] + rotations { try? FileManager.default.removeItem(atPath: p) } }
        let (monitor, _) = try makeMonitor(verbose: true, includeHeaders: true, path: path)
        let composite = CompositeEventMonitor(monitors: [monitor], mailboxLimit: 1 << 20)

        let threads = 6
        let perThread = 2500
        let longURL = "http://127.0.0.1:9000/" + String(repeating: "ä\"\\\n", count: 1500)
        let done = DispatchSemaphore(value: 0)
        for thread in 0..<threads {
            Thread {
                for i in 0..<perThread {
                    if thread == 0 && (i == 800 || i == 1600) {
                        // Rotate while the other threads keep posting.
                        let rotated = rotations[i / 800 - 1]
                        // The composite batches deliveries; let what was posted so far reach the old file.
                        composite.flush()
                        monitor.flush()
                        do { try FileManager.default.moveItem(atPath: path, toPath: rotated) } catch {
                            Issue.record(error)
                        }
                        monitor.reopen()
                        monitor.flush()  // the new file exists before the next rotation
                    }
                    let context = EventContext(connectionID: UInt64(thread), requestID: UInt64(i), taskID: 1)
                    if i % 100 == 99 {
                        var s = ExchangeSummary(requestID: UInt64(i), connectionID: UInt64(thread), clientAddress: "c",
                                                kind: .http, method: "GET", url: longURL, httpVersion: "HTTP/1.1",
                                                start: .now())
                        s.end = .now()
                        composite.post(LookoutEvent(context, RequestDidFinish(summary: s)))
                    } else {
                        composite.post(LookoutEvent(context, TaskDidReceiveData(bytes: i, totalBytes: UInt64(i))))
                    }
                }
                done.signal()
            }.start()
        }
        for _ in 0..<threads { done.wait() }
        composite.flush()
        monitor.flush()

        var all: [String] = []
        for p in rotations + [path] {
            let lines = try readLines(p)
            #expect(lines.count >= 800)
            all += lines
        }
        let summaries = threads * perThread / 100
        #expect(all.count == threads * perThread + summaries)  // summaries also have a request.didFinish
        #expect(monitor.recordsWritten == UInt64(all.count))
        #expect(monitor.writeErrors == 0)
        #expect(composite.droppedEventCount == 0)
        var last = [Int](repeating: -1, count: threads)
        var exchanges = 0
        for line in all {
            let record = try parseJSON(line)
            let event = try #require(record["event"] as? String)
            let conn = try #require(record["conn"] as? Int)
            let id = try #require(record["id"] as? Int)
            if event == "exchange" {
                exchanges += 1
                #expect(record["url"] as? String == longURL)
                #expect(id == last[conn])  // right after its request.didFinish
            } else {
                #expect(id == last[conn] + 1, "out of order for thread \(conn)")
                last[conn] = id
            }
        }
        #expect(exchanges == summaries)
        #expect(last == [Int](repeating: perThread - 1, count: threads))
    }
}
