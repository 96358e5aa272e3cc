#if canImport(Glibc)
import Glibc
import LookoutModel
import LookoutUpstream
#endif

/// A map-local answer's body: the file read in 64 KiB pieces while the client keeps up (the
/// exchange calls `send` again when it drains), never held whole.
package final class LocalFileSender: ResponseBodySource, @unchecked Sendable {  // confined to the exchange's loop queue
    private let descriptor: Int32
    private let path: String
    package let size: UInt64
    private var offset: UInt64 = 0
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// Opens `file`; nil with the system's reason when it cannot be read now.
    package static func open(_ file: String) -> Result<LocalFileSender, LocalFileError> {
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(LocalFileError(String(cString: strerror(errno)))) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(descriptor)
            return .failure(LocalFileError("not a regular file"))
        }
        return .success(LocalFileSender(descriptor: descriptor, path: file, size: UInt64(status.st_size)))
    }

    private init(descriptor: Int32, path: String, size: UInt64) {
        self.descriptor = descriptor
        self.path = path
        self.size = size
    }

    deinit { Glibc.close(descriptor) }

    /// `observe` sees every body byte written (for the capture). The length announced is the size
    /// at opening: a file that shrinks meanwhile fails the answer rather than sending a short body.
    package func send(to client: ClientResponseWriter, observe: (UnsafeRawBufferPointer) -> Void) -> BodyProgress {
        while offset < size {
            let want = Int(min(UInt64(buffer.count), size - offset))
            let (count, accepted) = buffer.withUnsafeMutableBytes { raw -> (Int, Bool) in
                let n = pread(descriptor, raw.baseAddress, want, off_t(offset))
                guard n > 0 else { return (0, true) }
                let read = UnsafeRawBufferPointer(rebasing: raw[..<n])
                observe(read)
                return (n, client.writeBody(read))
            }
            if count == 0 { return .failed }
            offset += UInt64(count)
            if !accepted && offset < size { return .waiting }
        }
        return .done
    }

    package var failure: ProxyError {
        .mapFailed(reason: .localFileUnreadable(file: path, detail: "it shrank while being sent"))
    }
}

package struct LocalFileError: Error {
    package let message: String
    init(_ message: String) { self.message = message }
}
