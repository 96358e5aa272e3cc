#if canImport(Glibc)
import Glibc
#endif
@testable import LookoutCache

/// The cache store's file reader: a stored object as found on disk — the binary prefix, the
/// metadata text, the body. The first input byte chooses a prefix that is right for the rest (so
/// the metadata parser is reached past the checksum) or the input's own bytes whole; either way
/// the object is opened from a file as the store opens it, and anything but a whole object is
/// refused without trapping.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCacheObject(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 1 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var file: [UInt8]
    if data[0] & 1 == 0 {
        // The metadata ends at the first NUL byte of the input; the rest is the body.
        let split = input.firstIndex(of: 0) ?? input.count
        let metadata = Array(input[..<split]), body = input[min(input.count, split + 1)...]
        let checksum = metadata.withUnsafeBytes { ObjectFile.checksum($0) }
        file = ObjectFile.prefix(metadataLength: metadata.count, bodyLength: Int64(body.count), checksum: checksum)
        file += metadata
        file += body
        let decoded = metadata.withUnsafeBytes { StoredMetadata(decoding: $0) }
        if let decoded {
            // What reads back must write out and read again the same (the store rewrites on refresh).
            let again = decoded.encoded().withUnsafeBytes { StoredMetadata(decoding: $0) }
            require(again == decoded, "stored metadata did not survive a round trip: \(decoded)")
        }
    } else {
        file = input
    }
    let path = "/dev/shm/lookout-fuzz-cache-object-\(getpid())"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return 0 }
    _ = file.withUnsafeBytes { ObjectFile.writeAll(fd, $0) }
    close(fd)
    if case .success(let opened) = ObjectFile.open(path) {
        require(opened.bodyLength >= 0 && opened.bodyOffset >= Int64(ObjectFile.prefixLength), "an opened object's layout")
        close(opened.fd)
    }
    unlink(path)
    return 0
}
