#if canImport(Glibc)
import Glibc
#endif

/// A captured body file, read 64 KiB at a time (`GET /exchanges/ID/body/…`).
struct CapturedBodySource: PacedSource {
    private var fd: Int32
    private var remaining: UInt64
    static let chunkBytes = 64 * 1024

    /// `fd` is open for reading at the start; `length` bytes are sent (the Content-Length).
    init(fd: Int32, length: UInt64) {
        self.fd = fd
        self.remaining = length
    }

    mutating func next() -> [UInt8]? {
        guard fd >= 0, remaining > 0 else { return nil }
        var chunk = [UInt8](repeating: 0, count: Int(min(UInt64(Self.chunkBytes), remaining)))
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        // A file cut short since its length was taken ends the body early: the Content-Length
        // then tells the client it is incomplete.
        guard n > 0 else { return nil }
        chunk.removeLast(chunk.count - n)
        remaining -= UInt64(n)
        return chunk
    }

    mutating func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}
