#if canImport(Glibc)
import Glibc
import LookoutModel
import LookoutUpstream
#endif

/// A request body kept so another attempt (a retry, a followed 307/308) can send it again — the
/// seeds' multipart threshold idea: the first `memoryLimit` bytes in memory, the rest in a file
/// under `directory`, unlinked as soon as it is created so nothing outlives the exchange (not even a
/// crash). Bodies over `limit` are not kept: `isOverLimit` turns true and the exchange stops
/// offering replays once what is stored has been sent.
final class ReplayableBody: @unchecked Sendable {  // confined to the exchange's loop queue
    static let memoryLimit = 1 << 20

    let limit: UInt64
    private let directory: String
    private var memory: [UInt8] = []
    private var fd: Int32 = -1
    private(set) var count: UInt64 = 0
    /// More than `limit` bytes arrived, or the file could not be written: no replay is possible.
    private(set) var isOverLimit = false

    init(limit: UInt64, directory: String) {
        self.limit = limit
        self.directory = directory
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Whether the body spilled to a file.
    var isOnDisk: Bool { fd >= 0 }

    /// Keeps `bytes`; returns false (and keeps nothing more) once that would pass `limit`.
    @discardableResult
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isOverLimit else { return false }
        guard count + UInt64(bytes.count) <= limit else {
            isOverLimit = true
            return false
        }
        if fd < 0 && memory.count + bytes.count <= Self.memoryLimit {
            memory.append(contentsOf: bytes)
        } else {
            if fd < 0 && !spill() { return false }
            if !writeAll(bytes) {
                isOverLimit = true
                return false
            }
        }
        count += UInt64(bytes.count)
        return true
    }

    /// Calls `body` with up to `maximum` stored bytes from `offset`; returns how many it passed.
    func read(from offset: UInt64, maximum: Int, _ body: (UnsafeRawBufferPointer) -> Void) -> Int {
        guard offset < count else { return 0 }
        let length = Int(min(UInt64(maximum), count - offset))
        if fd < 0 {
            memory.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[Int(offset)..<Int(offset) + length])) }
            return length
        }
        var chunk = [UInt8](repeating: 0, count: length)
        let got = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(offset)) }
        guard got > 0 else { return 0 }
        chunk.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<got])) }
        return got
    }

    /// Moves what is in memory to a new unlinked file.
    private func spill() -> Bool {
        // The folder and its parents (the state folder may not exist yet), private to this user.
        var path = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            path += "/" + component
            mkdir(path, 0o700)
        }
        var template = Array((directory + "/body-XXXXXX").utf8CString)
        let file = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard file >= 0 else {
            isOverLimit = true
            return false
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        fd = file
        let kept = memory
        memory = []
        let ok = kept.withUnsafeBytes { writeAll($0) }
        if !ok { isOverLimit = true }
        return ok
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
