#if canImport(Glibc)
import Glibc
#endif

/// Reads a JSON-lines file in 1 MiB chunks and hands out each complete line in place: memory
/// stays bounded by the longest line, whatever the file's size. With `follow`, it waits at the
/// end for more (and reopens the path when the file was rotated: another inode, or shorter).
public struct LogLineReader {
    public enum Failure: Error, CustomStringConvertible {
        case cannotOpen(String, Int32)
        public var description: String {
            switch self {
            case let .cannotOpen(path, code): return "cannot open \(path): \(String(cString: strerror(code)))"
            }
        }
    }

    let path: String?
    let follow: Bool

    /// `path` nil = standard input.
    public init(path: String?, follow: Bool = false) {
        self.path = path
        self.follow = follow
    }

    /// Calls `body` with each line (without its newline); `body` returns false to stop.
    public func forEachLine(_ body: (UnsafeBufferPointer<UInt8>) -> Bool) throws(Failure) {
        var fd: Int32 = 0
        var inode: UInt64 = 0
        func open() throws(Failure) {
            guard let path else { return }
            fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .cannotOpen(path, errno) }
            var st = stat()
            fstat(fd, &st)
            inode = UInt64(st.st_ino)
        }
        try open()
        defer { if path != nil { close(fd) } }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var filled = 0
        var offset: Int64 = 0
        while true {
            if filled == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }  // a very long line
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 && errno == EINTR { continue }
            if n > 0 {
                offset += Int64(n)
                filled += n
                var lineStart = 0
                let stop = buffer.withUnsafeBufferPointer { all -> Bool in
                    var i = 0
                    while i < filled {
                        guard let newline = memchr(all.baseAddress! + i, 0x0A, filled - i) else { break }
                        let end = UnsafePointer<UInt8>(newline.assumingMemoryBound(to: UInt8.self)) - all.baseAddress!
                        if end > lineStart, !body(UnsafeBufferPointer(rebasing: all[lineStart..<end])) { return true }
                        lineStart = end + 1
                        i = lineStart
                    }
                    return false
                }
                if stop { return }
                if lineStart > 0 {
                    buffer.withUnsafeMutableBytes { raw in
                        raw.baseAddress!.copyMemory(from: raw.baseAddress! + lineStart, byteCount: filled - lineStart)
                    }
                    filled -= lineStart
                }
                continue
            }
            // The end of the file (or an error).
            guard follow, let path else {
                if filled > 0 { _ = buffer.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[0..<filled])) } }
                return
            }
            usleep(200_000)
            var st = stat()
            if stat(path, &st) == 0, UInt64(st.st_ino) != inode || Int64(st.st_size) < offset {
                // Rotated or truncated: finish what the old file had, then start on the new one.
                close(fd)
                try open()
                offset = 0
                filled = 0
            }
        }
    }
}
