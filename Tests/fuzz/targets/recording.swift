#if canImport(Glibc)
import Glibc
#endif
import LookoutRecordings

/// The recording reader behind `replay`, `diff` and `simulate`: a log or a HAR file (HAR is parsed
/// whole, with Foundation's JSON reader), read from a file as the commands read it; what is not a
/// recording is refused with a message, never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecording(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let (all, _) = pieces(data, size)
    let path = "/dev/shm/lookout-fuzz-recording-\(getpid())"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return 0 }
    _ = all.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    do {
        let exchanges = try RecordingReader.read(path)
        for exchange in exchanges { _ = exchange.url; _ = exchange.method }
    } catch {
        _ = error.message
    }
    unlink(path)
    return 0
}
