import Foundation
import Glibc
@testable import LookoutModel
@testable import LookoutMonitors
import Testing

/// Dropping pages needs a filesystem with a page cache of its own: tmpfs pages are the file.
/// The scratch directory's filesystem is its longest mount point in /proc/self/mounts.
private let scratchIsTmpfs: Bool = {
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
    let directory = URL(fileURLWithPath: testDirectory).resolvingSymlinksInPath().path
    var best = (point: "", type: "")
    for line in mounts.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count > 2 else { continue }
        let point = String(fields[1])
        let covers = point == "/" || directory == point || directory.hasPrefix(point + "/")
        if covers && point.count > best.point.count { best = (point, String(fields[2])) }
    }
    return best.type == "tmpfs"
}()

@Suite(.enabled(if: !scratchIsTmpfs, "the scratch directory is on tmpfs, which keeps every page"))
struct LogWriteBehindTests {
    private static let window = 64 * 1024
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    private func openAppending(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        try #require(fd >= 0)
        return fd
    }

    /// `path` opened for appending, as the log opens it, and watched from its current end.
    private func watchedFile(_ path: String) throws -> (fd: Int32, behind: LogWriteBehind) {
        let fd = try openAppending(path)
        var behind = LogWriteBehind(window: Self.window)
        behind.attach(to: fd)
        return (fd, behind)
    }

    /// The 16 KiB of bytes every write repeats (`seed` tells two runs apart).
    private static func chunk(seed: UInt8 = 0) -> [UInt8] {
        (0..<16 * 1024).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    /// Writes `count` bytes of `chunk(seed:)` in 16 KiB writes, calling `afterEach` after each.
    private func writeChunks(_ count: Int, to fd: Int32, seed: UInt8 = 0, afterEach: () -> Void = {}) {
        let chunk = Self.chunk(seed: seed)
        var left = count
        while left > 0 {
            let n = min(left, chunk.count)
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, n) }
            #expect(written == n)
            afterEach()
            left -= n
        }
    }

    /// Appends `count` bytes, telling `behind` after each write, as the log does.
    private func append(_ count: Int, to fd: Int32, _ behind: inout LogWriteBehind, seed: UInt8 = 0) {
        writeChunks(count, to: fd, seed: seed) { behind.didWrite(to: fd) }
    }

    /// Leaves `count` bytes in the file at `path` as an earlier run would, with nothing watching.
    private func writeUnwatched(_ count: Int, to path: String) throws {
        let fd = try openAppending(path)
        writeChunks(count, to: fd)
        close(fd)
    }

    /// Which pages of the file at `path` are in the page cache (mincore(2) over a mapping).
    private func residentPages(_ path: String) throws -> [Bool] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var status = stat()
        try #require(fstat(fd, &status) == 0)
        let length = Int(status.st_size)
        guard length > 0 else { return [] }
        let mapping = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
        try #require(mapping != MAP_FAILED)
        defer { munmap(mapping, length) }
        var vector = [UInt8](repeating: 0, count: (length + Self.pageSize - 1) / Self.pageSize)
        try #require(mincore(mapping, length, &vector) == 0)
        return vector.map { $0 & 1 == 1 }
    }

    private func pages(_ resident: [Bool], from start: Int, to end: Int) -> ArraySlice<Bool> {
        resident[(start / Self.pageSize)..<min(resident.count, end / Self.pageSize)]
    }

    @Test func everyWindowButTheLastIsWrittenBackAndDropped() throws {
        let path = temporaryLogPath()
        var (fd, behind) = try watchedFile(path)
        defer { close(fd) }
        #expect(behind.isActive)

        append(5 * Self.window + 1000, to: fd, &behind)
        #expect(behind.startedThrough == 5 * Self.window)
        #expect(behind.droppedThrough == 4 * Self.window)

        let resident = try residentPages(path)
        #expect(!pages(resident, from: 0, to: 4 * Self.window).contains(true), "dropped windows still cached")
        #expect(!pages(resident, from: 4 * Self.window, to: 5 * Self.window).contains(false),
                "the last window should stay cached until the next one is written")

        // Nothing is lost: the file reads back as written.
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == 5 * Self.window + 1000)
        let chunk = Self.chunk()
        #expect(data.enumerated().allSatisfy { $0.element == chunk[$0.offset % chunk.count] })
    }

    @Test func windowsStartOnAPageBoundary() throws {
        let path = temporaryLogPath()
        try writeUnwatched(Self.pageSize + 10, to: path)
        var (fd, behind) = try watchedFile(path)
        defer { close(fd) }
        #expect(behind.startedThrough == Self.pageSize)
        append(3 * Self.window, to: fd, &behind)
        #expect(behind.startedThrough == Self.pageSize + 3 * Self.window)
        #expect(behind.droppedThrough == Self.pageSize + 2 * Self.window)
        let resident = try residentPages(path)
        #expect(!pages(resident, from: Self.pageSize, to: Self.pageSize + 2 * Self.window).contains(true))
    }

    @Test func anExistingFileIsLeftAloneAndCountedFromItsEnd() throws {
        let path = temporaryLogPath()
        try writeUnwatched(3 * Self.window, to: path)
        #expect(!LogWriteBehind(window: Self.window).isActive)  // until attached, it does nothing

        var (fd, behind) = try watchedFile(path)
        defer { close(fd) }
        #expect(behind.startedThrough == 3 * Self.window)
        append(Self.window - 1, to: fd, &behind)
        #expect(behind.startedThrough == 3 * Self.window)
        append(1, to: fd, &behind)
        #expect(behind.startedThrough == 4 * Self.window)
        #expect(behind.droppedThrough == 3 * Self.window)
        #expect(!(try residentPages(path)).prefix(3 * Self.window / Self.pageSize).contains(false))
    }

    @Test func aTruncatedFileIsCountedFromItsNewEnd() throws {
        let path = temporaryLogPath()
        var (fd, behind) = try watchedFile(path)
        defer { close(fd) }
        append(3 * Self.window, to: fd, &behind)
        #expect(behind.droppedThrough == 2 * Self.window)

        // `copytruncate` rotation empties the file under the writer.
        #expect(truncate(path, 0) == 0)
        append(100, to: fd, &behind, seed: 7)
        #expect(behind.startedThrough == 0 && behind.droppedThrough == 0)  // from the page the end is in
        append(3 * Self.window, to: fd, &behind, seed: 7)
        #expect(behind.startedThrough == 3 * Self.window)
        #expect(behind.droppedThrough == 2 * Self.window)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == 100 + 3 * Self.window)
    }

    @Test func aPipeIsNotWatched() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var behind = LogWriteBehind(window: Self.window)
        behind.attach(to: ends[1])
        #expect(!behind.isActive)
        behind.didWrite(to: ends[1])  // no lseek on a pipe, no error
        #expect(behind.startedThrough == 0)
    }

    /// A descriptor that stops answering (here closed; a filesystem that refuses the calls ends
    /// the same way) turns write-behind off for the file instead of failing each write.
    @Test func aFailingDescriptorTurnsItOff() throws {
        let path = temporaryLogPath()
        var (fd, behind) = try watchedFile(path)
        append(Self.window, to: fd, &behind)
        #expect(behind.isActive && behind.startedThrough == Self.window)
        close(fd)
        behind.didWrite(to: fd)
        #expect(!behind.isActive)
        behind.didWrite(to: fd)  // stays off, touches nothing
        #expect(behind.startedThrough == Self.window)
    }

    /// The log monitor writes its file back behind the records, and every record arrives whole.
    @Test func theLogMonitorKeepsOnlyItsNewestWindowsCached() throws {
        let path = temporaryLogPath()
        let monitor = try JSONLinesLogMonitor(destination: .file(path: path), verbose: false, revealSecrets: false,
                                              includeHeaders: false, writeBehindWindow: Self.window)
        let records = 2000  // about 0.7 MB of summary lines: ten windows
        for id in 0..<records {
            var summary = httpSummary()
            summary.requestID = UInt64(id)
            let event = LookoutEvent(EventContext(time: summary.end, connectionID: 1, requestID: UInt64(id)),
                                     RequestDidFinish(summary: summary))
            monitor.queue.sync { monitor.receive(event) }  // as a mailbox delivers: on the monitor's queue
            if id % 100 == 99 { monitor.flush() }
        }
        monitor.flush()
        // Before reading the file back, which brings its pages in again.
        let resident = try residentPages(path)
        try #require(resident.count > 6 * Self.window / Self.pageSize)
        #expect(!resident.prefix(resident.count - 2 * Self.window / Self.pageSize).contains(true))
        let lines = try readLines(path)
        #expect(lines.count == records)
        #expect(try lines.enumerated().allSatisfy { try parseJSON($0.element)["id"] as? Int == $0.offset })
    }
}
