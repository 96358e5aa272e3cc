#if canImport(Glibc)
import Glibc
import LookoutModel
import LookoutUpstream
#endif
import LookoutCache
import LookoutSync

/// The folder captured bodies are written to, kept under `maxTotalBytes` by deleting the oldest
/// finished files. Exchanges on any loop open and finish files here; the bookkeeping is under a
/// short lock, the writing is the exchange's own.
package final class BodyCaptureStore: @unchecked Sendable {  // the tallies are guarded by `lock`
    package let directory: String
    let maxTotalBytes: Int64

    private struct Finished {
        let size: Int64
        let generation: UInt64
    }

    private let lock = Guarded(())
    private var sizes: [String: Finished] = [:]
    /// Finished files, oldest first (entries whose generation no longer matches were replaced).
    private var order: [(path: String, generation: UInt64)] = []
    private var orderStart = 0
    private var generation: UInt64 = 0
    private var total: Int64 = 0

    /// Creates the folder (and its parents) and counts the files already there, oldest first.
    init(directory: String, maxTotalBytes: Int64) throws(CaptureStoreError) {
        self.directory = directory
        self.maxTotalBytes = maxTotalBytes
        if let failure = Directories.create(directory) { throw CaptureStoreError(path: failure.path, errno: failure.errno) }
        var found: [(String, Int64, Int)] = []
        for name in Directories.names(in: directory) where name.hasSuffix(".request") || name.hasSuffix(".response") || name.hasSuffix(".messages.jsonl") {
            var st = stat()
            let path = directory + "/" + name
            if lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
                found.append((path, Int64(st.st_size), Int(st.st_mtim.tv_sec)))
            }
        }
        for (path, size, _) in found.sorted(by: { $0.2 < $1.2 }) { record(path, size: size) }
        trim()
    }

    /// Opens (creating or replacing) the file for one body; nil with errno when it cannot be.
    package func open(name: String) -> (fd: Int32, path: String)? {
        let path = directory + "/" + name
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        lock.withLock { _ in
            // An earlier file of the same name (an id from an earlier run) is replaced.
            if let old = sizes.removeValue(forKey: path) { total -= old.size }
        }
        return (fd, path)
    }

    /// A body's file is complete: count it, and delete the oldest beyond the bound.
    package func finished(_ path: String, size: Int64) {
        lock.withLock { _ in record(path, size: size) }
        trim()
    }

    var totalBytes: Int64 { lock.withLock { _ in total } }

    private func record(_ path: String, size: Int64) {
        generation += 1
        if let old = sizes[path] { total -= old.size }
        sizes[path] = Finished(size: size, generation: generation)
        order.append((path, generation))
        total += size
    }

    private func trim() {
        let victims: [String] = lock.withLock { _ in
            var victims: [String] = []
            while total > maxTotalBytes, orderStart < order.count {
                let (path, generation) = order[orderStart]
                orderStart += 1
                guard let entry = sizes[path], entry.generation == generation else { continue }
                sizes[path] = nil
                total -= entry.size
                victims.append(path)
            }
            if orderStart > 1024 && orderStart * 2 > order.count {
                order.removeFirst(orderStart)
                orderStart = 0
            }
            return victims
        }
        for path in victims { unlink(path) }
    }
}

public struct CaptureStoreError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "cannot create capture directory \(path): \(String(cString: strerror(errno)))" }
}
