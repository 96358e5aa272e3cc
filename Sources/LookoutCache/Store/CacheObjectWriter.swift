#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Stores one response body as it streams by, under `tmp/`; `commit()` puts it in place.
///
/// Owned by one exchange on one loop. Whatever goes wrong — a body over `max_object_bytes`, a
/// failed write (a full or read-only disk) — the writer gives up, removes its file, and says why
/// in `refusal`; the exchange goes on relaying.
public final class CacheObjectWriter: @unchecked Sendable {  // confined to the owning exchange's loop
    public let key: StoredObjectKey
    public let metadata: StoredMetadata
    /// Why the object will not be stored, once the writer has given up.
    public private(set) var refusal: StoragePolicy.Refusal?
    public private(set) var bodyLength: Int64 = 0

    private let store: CacheStore
    private var fd: Int32
    private let temporaryPath: String
    private let metadataLength: Int
    private let checksum: UInt64
    private let keepsCopyUpTo: Int64
    private var copy: [UInt8]?

    init(store: CacheStore, key: StoredObjectKey, metadata: StoredMetadata, fd: Int32, temporaryPath: String,
         metadataLength: Int, checksum: UInt64, keepsCopyUpTo: Int64) {
        self.store = store
        self.key = key
        self.metadata = metadata
        self.fd = fd
        self.temporaryPath = temporaryPath
        self.metadataLength = metadataLength
        self.checksum = checksum
        self.keepsCopyUpTo = keepsCopyUpTo
        self.copy = keepsCopyUpTo > 0 ? [] : nil
    }

    deinit { abandon(nil) }

    /// Where the body starts in the file.
    public var bodyOffset: Int64 { Int64(ObjectFile.prefixLength + metadataLength) }

    /// A descriptor to read the body as it is written (`pread` at `bodyOffset`), for requests
    /// collapsed onto this one; it stays valid after the file is renamed or removed. The caller
    /// closes it. -1 once the writer has given up.
    public func openReader() -> Int32 {
        guard fd >= 0 else { return -1 }
        return dup(fd)
    }

    /// Appends body bytes; false once the writer has given up.
    @discardableResult
    public func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard refusal == nil, fd >= 0 else { return false }
        if bodyLength + Int64(bytes.count) > store.limits.maxObjectBytes {
            abandon(.tooLarge)
            return false
        }
        guard ObjectFile.writeAll(fd, bytes) else {
            abandon(.writeFailed)
            return false
        }
        bodyLength += Int64(bytes.count)
        if copy != nil {
            if bodyLength <= keepsCopyUpTo { copy!.append(contentsOf: bytes) } else { copy = nil }
        }
        return true
    }

    /// Finishes the file and puts it in place; returns nil when stored, else why not.
    @discardableResult
    public func commit() -> StoragePolicy.Refusal? {
        guard refusal == nil, fd >= 0 else { return refusal ?? .incomplete }
        let prefix = ObjectFile.prefix(metadataLength: metadataLength, bodyLength: bodyLength, checksum: checksum)
        let wrote = prefix.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } == ObjectFile.prefixLength
        let closed = close(fd) == 0
        fd = -1
        guard wrote, closed,
              store.install(key, metadata: metadata, from: temporaryPath,
                            size: Int64(ObjectFile.prefixLength + metadataLength) + bodyLength, body: copy) else {
            unlink(temporaryPath)
            refusal = .writeFailed
            return refusal
        }
        return nil
    }

    /// Gives up (the response ended early, or the exchange failed).
    public func abandon(_ reason: StoragePolicy.Refusal? = .incomplete) {
        if refusal == nil { refusal = reason }
        guard fd >= 0 else { return }
        _ = close(fd)
        fd = -1
        unlink(temporaryPath)
    }
}
