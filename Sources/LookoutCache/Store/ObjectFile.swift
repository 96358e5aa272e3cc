#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The layout of one stored object on disk, and its checks.
///
/// A 32-byte prefix — `LKCACHE1`, the metadata's length, the body's length (little-endian
/// 64-bit each) and an FNV-1a checksum of the metadata — then the metadata, then the body. An
/// object is written under `tmp/` and renamed into place only when complete, so a file in place
/// is whole unless something else damaged it; opening checks the prefix, the checksum and that
/// the file's length is exactly prefix + metadata + body, and a file that fails is removed.
enum ObjectFile {
    static let magic: [UInt8] = Array("LKCACHE1".utf8)
    static let prefixLength = 32
    /// Metadata larger than this is refused (a response head is bounded well below it).
    static let maxMetadataLength = 1 << 20

    struct Opened {
        let fd: Int32
        let metadata: StoredMetadata
        let bodyOffset: Int64
        let bodyLength: Int64
    }

    enum Failure: Error {
        /// The file is gone (evicted or purged meanwhile).
        case missing
        /// Present but not a whole object: removed by the caller.
        case corrupt(String)
    }

    static func prefix(metadataLength: Int, bodyLength: Int64, checksum: UInt64) -> [UInt8] {
        var bytes = magic
        bytes.reserveCapacity(prefixLength)
        for value in [UInt64(metadataLength), UInt64(bodyLength), checksum] {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes
    }

    /// FNV-1a 64 over metadata (a few hundred bytes, written and checked once per store or open).
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    /// Opens `path` and checks it; the caller owns the returned descriptor.
    static func open(_ path: String) -> Result<Opened, Failure> {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.missing) }
        switch read(fd) {
        case .success(let opened):
            return .success(opened)
        case .failure(let failure):
            _ = close(fd)
            return .failure(failure)
        }
    }

    private static func read(_ fd: Int32) -> Result<Opened, Failure> {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(.missing) }
        var prefix = [UInt8](repeating: 0, count: prefixLength)
        guard pread(fd, &prefix, prefixLength, 0) == prefixLength, prefix.prefix(8).elementsEqual(magic) else {
            return .failure(.corrupt("bad prefix"))
        }
        let (metadataLength, bodyLength, checksum) = prefix.withUnsafeBytes { raw in
            (Int(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))),
             Int64(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self))),
             UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        }
        guard metadataLength > 0, metadataLength <= maxMetadataLength, bodyLength >= 0,
              Int64(st.st_size) == Int64(prefixLength + metadataLength) + bodyLength else {
            return .failure(.corrupt("length mismatch"))
        }
        var metadataBytes = [UInt8](repeating: 0, count: metadataLength)
        guard pread(fd, &metadataBytes, metadataLength, off_t(prefixLength)) == metadataLength else {
            return .failure(.corrupt("short read"))
        }
        return metadataBytes.withUnsafeBytes { raw in
            guard Self.checksum(raw) == checksum else { return .failure(.corrupt("checksum mismatch")) }
            guard let metadata = StoredMetadata(decoding: raw) else { return .failure(.corrupt("unreadable metadata")) }
            return .success(Opened(fd: fd, metadata: metadata, bodyOffset: Int64(prefixLength + metadataLength),
                                   bodyLength: bodyLength))
        }
    }

    /// Writes all of `bytes` at the current offset; false on failure (errno set).
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var base = bytes.baseAddress else { return true }
        var left = bytes.count
        while left > 0 {
            let n = Glibc.write(fd, base, left)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            if n == 0 { return false }
            base += n
            left -= n
        }
        return true
    }

    /// Reads up to `count` bytes at `offset`; fewer only at the end of the file or on an error.
    static func readAll(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let n = pread(fd, base + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            done += n
        }
        return done
    }
}
