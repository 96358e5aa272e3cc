#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX file operations the library needs (no Foundation).
enum FileIO {
    /// The whole content of the file at `path`.
    static func read(_ path: String) throws(CertificateError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot open \(path)") }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("cannot read \(path)")
            }
            if count == 0 { break }
            result.append(contentsOf: chunk[0..<count])
        }
        return result
    }

    /// Whether something exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// The permission bits of `path` (e.g. 0o600), or nil if it does not exist.
    static func permissions(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// Creates `path` and any missing parents; a directory this call creates gets `mode`
    /// exactly (not narrowed by the umask). An existing directory is left as it is.
    static func makeDirectory(_ path: String, mode: mode_t) throws(CertificateError) {
        if exists(path) { return }
        var parent = path
        while parent.hasSuffix("/") && parent.count > 1 { parent.removeLast() }
        if let slash = parent.lastIndex(of: "/"), slash != parent.startIndex {
            try makeDirectory(String(parent[..<slash]), mode: mode)
        }
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw failure("cannot create directory \(path)")
        }
        _ = chmod(path, mode)
    }

    /// Writes `bytes` to a file at `path` with exactly `mode`, atomically: the data goes to a
    /// temporary file in the same directory which is then renamed over `path` or, when
    /// `exclusive`, hard-linked to `path` so that an existing file is never replaced (the
    /// call then fails with EEXIST).
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t, exclusive: Bool = false) throws(CertificateError) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("cannot create \(temporary)") }
        var ok = fchmod(fd, mode) == 0
        var offset = 0
        while ok && offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                systemWrite(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                ok = false
            } else {
                offset += written
            }
        }
        ok = ok && fsync(fd) == 0
        let error = failure("cannot write \(temporary)")
        close(fd)
        guard ok else {
            unlink(temporary)
            throw error
        }
        if exclusive {
            let linked = link(temporary, path) == 0
            let linkError = failure("cannot create \(path)")
            unlink(temporary)
            guard linked else { throw linkError }
        } else {
            guard rename(temporary, path) == 0 else {
                let renameError = failure("cannot rename \(temporary) to \(path)")
                unlink(temporary)
                throw renameError
            }
        }
    }

    private static func failure(_ context: String) -> CertificateError {
        CertificateError(.fileSystem, "\(context): \(String(cString: strerror(errno)))")
    }

    private static func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        return Glibc.read(fd, buffer, count)
        #elseif canImport(Musl)
        return Musl.read(fd, buffer, count)
        #else
        return Darwin.read(fd, buffer, count)
        #endif
    }

    private static func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        return Glibc.write(fd, buffer, count)
        #elseif canImport(Musl)
        return Musl.write(fd, buffer, count)
        #else
        return Darwin.write(fd, buffer, count)
        #endif
    }
}
