#if canImport(Glibc)
import Glibc
#endif
import LookoutLogQuery

/// `GET /exchanges.tar.gz`: a recording as one gzip-compressed tar, made file by file as the client
/// takes it — `lookout-recording/recording.jsonl` and the capture files it names under
/// `lookout-recording/capture/`. A capture file is read 64 KiB at a time, never held whole.
struct RecordingArchiveSource: PacedSource {
    private let log: [UInt8]
    private let files: [(path: String, name: String)]
    private let gzip: GzipWriter
    private let modified: Int
    private var wroteLog = false
    private var nextFile = 0
    /// The capture file being written: its declared size and how many of its bytes are still to come.
    private var open: (fd: Int32, size: UInt64, remaining: UInt64)?
    private var done = false

    init(archive: RecordingArchive, gzip: GzipWriter, now: Int) {
        log = archive.log
        files = archive.files
        self.gzip = gzip
        modified = now
    }

    mutating func next() -> [UInt8]? {
        // zlib keeps small inputs back, so a step may compress to nothing: go on until it gives bytes.
        while !done {
            var out = gzip.write(step())
            if done { out += gzip.finish() }
            if !out.isEmpty { return out }
        }
        return nil
    }

    /// The next piece of the tar stream (before compression).
    private mutating func step() -> [UInt8] {
        if !wroteLog {
            wroteLog = true
            let name = RecordingArchive.folder + "/" + RecordingArchive.logName
            let size = UInt64(log.count)
            return TarFormat.header(name: name, size: size, modified: modified) + log + TarFormat.padding(after: size)
        }
        if let current = open { return content(current) }
        while nextFile < files.count {
            let file = files[nextFile]
            nextFile += 1
            // A capture file evicted since its record was written is left out: the log still
            // names it, and a reader says which body is missing.
            let fd = Glibc.open(file.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            var info = stat()
            guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
                Glibc.close(fd)
                continue
            }
            let size = UInt64(info.st_size)
            open = (fd, size, size)
            return TarFormat.header(name: RecordingArchive.folder + "/" + file.name, size: size,
                                    modified: Int(info.st_mtim.tv_sec)) + (size == 0 ? finishFile() : [])
        }
        done = true
        return TarFormat.end
    }

    /// The next 64 KiB of the open file; its padding after its last byte. A file cut short since
    /// its size was taken is filled with zeros, so the archive stays readable.
    private mutating func content(_ current: (fd: Int32, size: UInt64, remaining: UInt64)) -> [UInt8] {
        let want = Int(min(UInt64(CapturedBodySource.chunkBytes), current.remaining))
        var chunk = [UInt8](repeating: 0, count: want)
        let n = chunk.withUnsafeMutableBytes { read(current.fd, $0.baseAddress, $0.count) }
        if n > 0, n < want { chunk.removeLast(want - n) }
        let remaining = current.remaining - UInt64(chunk.count)
        open = (current.fd, current.size, remaining)
        guard remaining == 0 else { return chunk }
        return chunk + finishFile()
    }

    /// Closes the open file and pads its content to a whole block.
    private mutating func finishFile() -> [UInt8] {
        guard let current = open else { return [] }
        Glibc.close(current.fd)
        open = nil
        return TarFormat.padding(after: current.size)
    }

    mutating func close() {
        if let current = open { Glibc.close(current.fd) }
        open = nil
    }
}
