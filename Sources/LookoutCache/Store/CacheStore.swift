#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLookoutSocket
import HTTPTypes
import LookoutSync

/// The bounds of a store (config `cache.max_size_bytes`, `max_object_bytes`, `memory_bytes`).
public struct CacheLimits: Sendable, Equatable {
    public var maxSizeBytes: Int64
    public var maxObjectBytes: Int64
    public var memoryBytes: Int64

    public init(maxSizeBytes: Int64 = 1 << 30, maxObjectBytes: Int64 = 64 << 20, memoryBytes: Int64 = 64 << 20) {
        self.maxSizeBytes = maxSizeBytes
        self.maxObjectBytes = maxObjectBytes
        self.memoryBytes = memoryBytes
    }

    /// Bodies up to this size are also kept in memory once stored or read.
    public var memoryObjectLimit: Int64 { min(memoryBytes / 8, 1 << 20) }
}

public enum CacheStoreError: Error, Equatable, CustomStringConvertible {
    case cannotCreate(path: String, errno: Int32)
    /// Another process (a running Lookout) has the store open.
    case inUse(path: String)

    public var description: String {
        switch self {
        case let .cannotCreate(path, code): return "cannot create cache directory \(path): \(String(cString: strerror(code)))"
        case let .inUse(path): return "the cache store \(path) is in use by another process (a running Lookout)"
        }
    }
}

/// Something the store did on its own, for the session's events.
public enum CacheStoreNotice: Sendable {
    /// An object was removed to stay under `max_size_bytes`.
    case evicted(url: String?, key: StoredObjectKey, bytes: Int64)
    /// A damaged object file was found and removed.
    case removedCorrupt(key: StoredObjectKey, reason: String)
}

/// The cache's objects on disk (`path/objects/<xx>/<id>.obj`), an index of them in memory, and
/// the small hot ones in memory too.
///
/// The directory is the index of record: at start-up it is listed (names and sizes, no file is
/// read), files being written under `path/tmp/` are removed, and names that are not objects are
/// removed. Objects are written whole under `tmp/` and renamed into place (see `ObjectFile`), so
/// a store killed at any point reopens clean. Least recently used objects are evicted beyond
/// `maxSizeBytes` (recency restarts from the files' modification times after a restart).
///
/// Called from any event loop: the index is guarded by `lock`, file I/O happens outside it.
public final class CacheStore: @unchecked Sendable {  // index state guarded by `lock`
    public let directory: String
    public let limits: CacheLimits
    /// Told about evictions and corrupt files, on the thread that caused them.
    public let noticeHandler: (@Sendable (CacheStoreNotice) -> Void)?

    private struct Entry {
        var size: Int64
        var lastUsed: UInt64
    }

    private struct MemoryObject {
        let metadata: StoredMetadata
        let facts: FreshnessFacts
        let body: [UInt8]
        var lastUsed: UInt64
    }

    private let lock = Guarded(())
    // Guarded by `lock`.
    private var entries: [StoredObjectKey: Entry] = [:]
    private var variants: [ObjectID: Set<ObjectID>] = [:]
    private var varyNames: [ObjectID: [String]] = [:]
    private var memory: [StoredObjectKey: MemoryObject] = [:]
    private var memoryUsed: Int64 = 0
    private var totalBytes: Int64 = 0
    private var tick: UInt64 = 0
    private var temporaryCounter: UInt64 = 0

    /// An exclusive `flock` on `path/lock`, held while the store is open: a second process
    /// (`lookout cache` while the proxy runs) cannot list or delete under the proxy's feet.
    private let lockFile: Int32

    private var objectsDirectory: String { directory + "/objects" }
    private var temporaryDirectory: String { directory + "/tmp" }

    /// Opens (creating) the store at `directory` and lists what it holds.
    public init(directory: String, limits: CacheLimits,
                noticeHandler: (@Sendable (CacheStoreNotice) -> Void)? = nil) throws(CacheStoreError) {
        self.directory = directory
        self.limits = limits
        self.noticeHandler = noticeHandler
        // The directory and any missing parents (the state directory may not exist yet).
        for path in [directory + "/objects", directory + "/tmp"] {
            if let failure = Directories.create(path) { throw .cannotCreate(path: failure.path, errno: failure.errno) }
        }
        lockFile = Glibc.open(directory + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFile >= 0 else { throw .cannotCreate(path: directory + "/lock", errno: errno) }
        guard flock(lockFile, LOCK_EX | LOCK_NB) == 0 else {
            _ = close(lockFile)
            throw .inUse(path: directory)
        }
        Self.removeAll(in: temporaryDirectory)
        scan()
    }

    deinit {
        _ = close(lockFile)
    }

    // MARK: - Figures

    public struct Statistics: Sendable, Equatable {
        public var objects: Int
        public var bytes: Int64
        public var memoryObjects: Int
        public var memoryBytes: Int64
    }

    public var statistics: Statistics {
        lock.withLock { _ in
            Statistics(objects: entries.count, bytes: totalBytes, memoryObjects: memory.count, memoryBytes: memoryUsed)
        }
    }

    // MARK: - Lookup

    public enum Lookup {
        case found(CachedObject)
        /// Nothing stored for the URL.
        case uriMiss
        /// Responses for the URL vary, and none matches this request's fields (§4.1).
        case varyMiss
    }

    /// The stored response for `url` that matches `requestFields` (§4.1), if any.
    public func lookup(url: String, requestFields: HTTPFields) -> Lookup {
        let primary = ObjectID(key: url)
        enum Step { case miss(Lookup), memory(CachedObject), disk(StoredObjectKey, [String], [String?]) }
        let step: Step = lock.withLock { _ in
            var key = StoredObjectKey(primary: primary, variant: nil)
            var names: [String] = [], values: [String?] = []
            if let varying = varyNames[primary] {
                names = varying
                values = VaryKey.values(of: varying, in: requestFields)
                key = StoredObjectKey(primary: primary, variant: ObjectID(key: StoredMetadata.objectKey(
                    url: url, varyNames: names, varyValues: values)))
                if entries[key] == nil { return .miss(.varyMiss) }
            } else if entries[key] == nil {
                return .miss(.uriMiss)
            }
            tick += 1
            entries[key]?.lastUsed = tick
            if var object = memory[key] {
                object.lastUsed = tick
                memory[key] = object
                return .memory(CachedObject(key: key, metadata: object.metadata, bodyLength: Int64(object.body.count),
                                            body: .memory(object.body), facts: object.facts))
            }
            return .disk(key, names, values)
        }
        switch step {
        case .miss(let result): return result
        case .memory(let object): return .found(object)
        case let .disk(key, names, values): return open(key, url: url, varyNames: names, varyValues: values)
        }
    }

    private func open(_ key: StoredObjectKey, url: String, varyNames names: [String], varyValues values: [String?]) -> Lookup {
        let path = self.path(of: key)
        switch ObjectFile.open(path) {
        case .failure(.missing):
            forget(key)
            return names.isEmpty ? .uriMiss : .varyMiss
        case .failure(.corrupt(let reason)):
            unlink(path)
            forget(key)
            noticeHandler?(.removedCorrupt(key: key, reason: reason))
            return names.isEmpty ? .uriMiss : .varyMiss
        case .success(let opened):
            let metadata = opened.metadata
            guard metadata.url == url, metadata.varyNames == names, metadata.varyValues == values else {
                // Another key with the same hash (or a stale variant): not this request's object.
                _ = close(opened.fd)
                return names.isEmpty ? .uriMiss : .varyMiss
            }
            if opened.bodyLength <= limits.memoryObjectLimit {
                var body = [UInt8](repeating: 0, count: Int(opened.bodyLength))
                let read = body.withUnsafeMutableBytes { ObjectFile.readAll(opened.fd, into: $0, at: opened.bodyOffset) }
                _ = close(opened.fd)
                guard read == body.count else {
                    unlink(path)
                    forget(key)
                    noticeHandler?(.removedCorrupt(key: key, reason: "short body"))
                    return names.isEmpty ? .uriMiss : .varyMiss
                }
                let object = CachedObject(key: key, metadata: metadata, bodyLength: Int64(body.count), body: .memory(body))
                remember(key, metadata: metadata, facts: object.facts, body: body)
                return .found(object)
            }
            return .found(CachedObject(key: key, metadata: metadata, bodyLength: opened.bodyLength,
                                       body: .file(fd: opened.fd, offset: opened.bodyOffset)))
        }
    }

    // MARK: - Storing

    /// Starts storing a response; nil with the reason when it cannot be (too large, or the
    /// directory cannot be written).
    public func makeWriter(metadata: StoredMetadata, expectedLength: Int64?)
        -> Result<CacheObjectWriter, StoragePolicy.Refusal> {
        if let expectedLength, expectedLength > limits.maxObjectBytes { return .failure(.tooLarge) }
        let primary = ObjectID(key: metadata.url)
        let key = StoredObjectKey(primary: primary, variant: metadata.varyNames.isEmpty ? nil : ObjectID(key: metadata.objectKey))
        guard let (fd, temporary) = createTemporary(named: key.description, suffix: "part") else {
            return .failure(.writeFailed)
        }
        let encoded = metadata.encoded()
        let header = ObjectFile.prefix(metadataLength: encoded.count, bodyLength: 0,
                                       checksum: encoded.withUnsafeBytes(ObjectFile.checksum))
        guard header.withUnsafeBytes({ ObjectFile.writeAll(fd, $0) }),
              encoded.withUnsafeBytes({ ObjectFile.writeAll(fd, $0) }) else {
            _ = close(fd)
            unlink(temporary)
            return .failure(.writeFailed)
        }
        let keepsCopy = (expectedLength ?? 0) <= limits.memoryObjectLimit
        return .success(CacheObjectWriter(store: self, key: key, metadata: metadata, fd: fd, temporaryPath: temporary,
                                          metadataLength: encoded.count, checksum: encoded.withUnsafeBytes(ObjectFile.checksum),
                                          keepsCopyUpTo: keepsCopy ? limits.memoryObjectLimit : 0))
    }

    /// Puts a finished object in place (called by its writer).
    func install(_ key: StoredObjectKey, metadata: StoredMetadata, from temporary: String, size: Int64,
                 body: [UInt8]?) -> Bool {
        let folder = objectsDirectory + "/" + key.primary.folder
        if mkdir(folder, 0o700) != 0 && errno != EEXIST { return false }
        if !metadata.varyNames.isEmpty && !writeVaryMarker(key.primary, names: metadata.varyNames) { return false }
        guard rename(temporary, folder + "/" + key.fileName) == 0 else { return false }
        var unreachable: [StoredObjectKey] = []
        lock.withLock { _ in
            let primary = key.primary
            let previousNames = varyNames[primary]
            if previousNames != (metadata.varyNames.isEmpty ? nil : metadata.varyNames) {
                // What the URL varies on changed: the variants stored under the old names (or
                // the one unvarying object) can no longer be found.
                if previousNames != nil {
                    for variant in variants[primary] ?? [] where variant != key.variant {
                        unreachable.append(StoredObjectKey(primary: primary, variant: variant))
                    }
                } else if key.variant != nil, entries[StoredObjectKey(primary: primary, variant: nil)] != nil {
                    unreachable.append(StoredObjectKey(primary: primary, variant: nil))
                }
                if metadata.varyNames.isEmpty { varyNames[primary] = nil } else { varyNames[primary] = metadata.varyNames }
            }
            for old in unreachable { dropLocked(old) }
            tick += 1
            if let previous = entries[key] { totalBytes -= previous.size }
            entries[key] = Entry(size: size, lastUsed: tick)
            totalBytes += size
            if let variant = key.variant { variants[primary, default: []].insert(variant) }
            if let body { rememberLocked(key, metadata: metadata, facts: FreshnessFacts(metadata), body: body) } else { forgetMemoryLocked(key) }
        }
        if metadata.varyNames.isEmpty { unlink(varyMarkerPath(key.primary)) }
        for old in unreachable { unlink(path(of: old)) }
        evictIfNeeded()
        return true
    }

    /// Replaces the stored header fields of an object after a 304 (RFC 9111 §3.2, §4.3.4): a new
    /// file with the new metadata and the same body (copied in the kernel), renamed over the old.
    public func updateMetadata(of object: CachedObject, to metadata: StoredMetadata) -> Bool {
        let key = object.key
        guard let (fd, temporary) = createTemporary(named: key.description, suffix: "part") else { return false }
        defer { _ = close(fd) }
        let encoded = metadata.encoded()
        let header = ObjectFile.prefix(metadataLength: encoded.count, bodyLength: object.bodyLength,
                                       checksum: encoded.withUnsafeBytes(ObjectFile.checksum))
        var written = header.withUnsafeBytes({ ObjectFile.writeAll(fd, $0) })
            && encoded.withUnsafeBytes({ ObjectFile.writeAll(fd, $0) })
        if written {
            switch object.body {
            case .memory(let bytes):
                written = bytes.withUnsafeBytes { ObjectFile.writeAll(fd, $0) }
            case .file(let source, let offset):
                var inputOffset = Int64(offset)
                var left = Int(object.bodyLength)
                while written && left > 0 {
                    let n = lookout_copy_file_range(source, &inputOffset, fd, left)
                    if n <= 0 { written = n < 0 && errno == EINTR; continue }
                    left -= n
                }
            }
        }
        let size = Int64(ObjectFile.prefixLength + encoded.count) + object.bodyLength
        guard written, rename(temporary, path(of: key)) == 0 else {
            unlink(temporary)
            return false
        }
        lock.withLock { _ in
            guard let previous = entries[key] else { return }
            totalBytes += size - previous.size
            entries[key]?.size = size
            if let cached = memory[key] {
                memory[key] = MemoryObject(metadata: metadata, facts: FreshnessFacts(metadata), body: cached.body,
                                           lastUsed: cached.lastUsed)
            }
        }
        return true
    }

    // MARK: - Removing

    /// Removes every stored response for `url` (all variants); returns how many (§4.4 invalidation, `cache purge`).
    @discardableResult
    public func remove(url: String) -> Int {
        let primary = ObjectID(key: url)
        let keys: [StoredObjectKey] = lock.withLock { _ in
            var keys = (variants[primary] ?? []).map { StoredObjectKey(primary: primary, variant: $0) }
            let plain = StoredObjectKey(primary: primary, variant: nil)
            if entries[plain] != nil { keys.append(plain) }
            for key in keys { dropLocked(key) }
            varyNames[primary] = nil
            return keys
        }
        for key in keys { unlink(path(of: key)) }
        unlink(varyMarkerPath(primary))
        return keys.count
    }

    /// Removes everything; returns how many objects.
    @discardableResult
    public func removeAll() -> Int {
        let count: Int = lock.withLock { _ in
            let count = entries.count
            entries = [:]
            variants = [:]
            varyNames = [:]
            memory = [:]
            memoryUsed = 0
            totalBytes = 0
            return count
        }
        for folder in Directories.names(in: objectsDirectory) { Self.removeAll(in: objectsDirectory + "/" + folder) }
        return count
    }

    // MARK: - Listing

    public struct Listing: Sendable {
        public var key: StoredObjectKey
        public var url: String
        public var status: Int
        public var bytes: Int64
        public var responseTime: Double
    }

    /// Every object's URL and size (reads each object's metadata: for the operator, not traffic).
    public func list() -> [Listing] {
        let keys: [(StoredObjectKey, Int64)] = lock.withLock { _ in entries.map { ($0.key, $0.value.size) } }
        return keys.compactMap { key, size in
            guard case .success(let opened) = ObjectFile.open(path(of: key)) else { return nil }
            _ = close(opened.fd)
            return Listing(key: key, url: opened.metadata.url, status: opened.metadata.status, bytes: size,
                           responseTime: opened.metadata.responseTime)
        }
    }

    // MARK: - Memory

    private func remember(_ key: StoredObjectKey, metadata: StoredMetadata, facts: FreshnessFacts, body: [UInt8]) {
        lock.withLock { _ in rememberLocked(key, metadata: metadata, facts: facts, body: body) }
    }

    private func rememberLocked(_ key: StoredObjectKey, metadata: StoredMetadata, facts: FreshnessFacts, body: [UInt8]) {
        guard entries[key] != nil, Int64(body.count) <= limits.memoryObjectLimit else { return }
        forgetMemoryLocked(key)
        tick += 1
        memory[key] = MemoryObject(metadata: metadata, facts: facts, body: body, lastUsed: tick)
        memoryUsed += Int64(body.count)
        if memoryUsed > limits.memoryBytes {
            // Drop the least recently used down to 90 %, in one sort (not one scan per object).
            let target = limits.memoryBytes * 9 / 10
            for (old, object) in memory.sorted(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                if memoryUsed <= target { break }
                memory[old] = nil
                memoryUsed -= Int64(object.body.count)
            }
        }
    }

    private func forgetMemoryLocked(_ key: StoredObjectKey) {
        if let old = memory.removeValue(forKey: key) { memoryUsed -= Int64(old.body.count) }
    }

    private func forget(_ key: StoredObjectKey) {
        lock.withLock { _ in dropLocked(key) }
    }

    private func dropLocked(_ key: StoredObjectKey) {
        if let entry = entries.removeValue(forKey: key) { totalBytes -= entry.size }
        forgetMemoryLocked(key)
        if let variant = key.variant {
            variants[key.primary]?.remove(variant)
            if variants[key.primary]?.isEmpty == true { variants[key.primary] = nil }
        }
    }

    // MARK: - Eviction

    private func evictIfNeeded() {
        let victims: [(StoredObjectKey, Int64)] = lock.withLock { _ in
            guard totalBytes > limits.maxSizeBytes else { return [] }
            // Least recently used first, down to 95 % of the bound so the next store does not evict again.
            let target = limits.maxSizeBytes / 20 * 19
            var victims: [(StoredObjectKey, Int64)] = []
            for (key, entry) in entries.sorted(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                if totalBytes <= target { break }
                victims.append((key, entry.size))
                dropLocked(key)
            }
            return victims
        }
        for (key, bytes) in victims {
            let path = self.path(of: key)
            var url: String?
            if noticeHandler != nil, case .success(let opened) = ObjectFile.open(path) {
                url = opened.metadata.url
                _ = close(opened.fd)
            }
            unlink(path)
            noticeHandler?(.evicted(url: url, key: key, bytes: bytes))
        }
    }

    // MARK: - Files

    func path(of key: StoredObjectKey) -> String {
        objectsDirectory + "/" + key.primary.folder + "/" + key.fileName
    }

    private func varyMarkerPath(_ primary: ObjectID) -> String {
        objectsDirectory + "/" + primary.folder + "/\(primary).vary"
    }

    /// A new file under `tmp/` (read-write, so a writer's file can be read by collapsed requests).
    private func createTemporary(named name: String, suffix: String) -> (Int32, String)? {
        let number = lock.withLock { _ in
            temporaryCounter += 1
            return temporaryCounter
        }
        let path = "\(temporaryDirectory)/\(name).\(getpid()).\(number).\(suffix)"
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return fd >= 0 ? (fd, path) : nil
    }

    private func writeVaryMarker(_ primary: ObjectID, names: [String]) -> Bool {
        if lock.withLock({ _ in varyNames[primary] == names }) { return true }
        guard let (fd, temporary) = createTemporary(named: primary.description, suffix: "vary") else { return false }
        let text = Array(names.joined(separator: "\n").utf8)
        let ok = text.withUnsafeBytes { ObjectFile.writeAll(fd, $0) }
        _ = close(fd)
        guard ok, rename(temporary, varyMarkerPath(primary)) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// Lists the objects on disk into the index (names and sizes only; no object is read).
    private func scan() {
        var found: [(StoredObjectKey, Int64, Int)] = []
        for folder in Directories.names(in: objectsDirectory) {
            let folderPath = objectsDirectory + "/" + folder
            guard folder.utf8.count == 2 else {
                Self.removeTree(folderPath)
                continue
            }
            for name in Directories.names(in: folderPath) {
                let path = folderPath + "/" + name
                var st = stat()
                guard lstat(path, &st) == 0 else { continue }
                let parts = name.split(separator: ".")
                if parts.count == 2, parts[1] == "vary", let primary = ObjectID(hex: parts[0]),
                   (st.st_mode & S_IFMT) == S_IFREG, let names = Self.readVaryMarker(path) {
                    varyNames[primary] = names
                    continue
                }
                if (st.st_mode & S_IFMT) == S_IFREG, parts.last == "obj", parts.count == 2 || parts.count == 3,
                   let primary = ObjectID(hex: parts[0]), primary.folder == folder {
                    let variant = parts.count == 3 ? ObjectID(hex: parts[1]) : nil
                    if parts.count == 2 || variant != nil {
                        found.append((StoredObjectKey(primary: primary, variant: variant), Int64(st.st_size),
                                      Int(st.st_mtim.tv_sec)))
                        continue
                    }
                }
                // Not something this store writes.
                if (st.st_mode & S_IFMT) == S_IFDIR { Self.removeTree(path) } else { unlink(path) }
            }
        }
        // Recency from the files' times: older files are evicted first.
        found.sort { $0.2 < $1.2 }
        for (key, size, _) in found {
            tick += 1
            entries[key] = Entry(size: size, lastUsed: tick)
            totalBytes += size
            if let variant = key.variant { variants[key.primary, default: []].insert(variant) }
        }
        // A variant whose URL has no marker (or a marker with no variants) can never be found.
        for (primary, _) in variants where varyNames[primary] == nil {
            for variant in variants[primary] ?? [] {
                let key = StoredObjectKey(primary: primary, variant: variant)
                unlink(path(of: key))
                dropLocked(key)
            }
        }
        for (primary, _) in varyNames where variants[primary] == nil {
            unlink(varyMarkerPath(primary))
            varyNames[primary] = nil
        }
        evictIfNeeded()
    }

    private static func readVaryMarker(_ path: String) -> [String]? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let n = bytes.withUnsafeMutableBytes { ObjectFile.readAll(fd, into: $0, at: 0) }
        guard n > 0, n < bytes.count else { return nil }
        let names = String(decoding: bytes[..<n], as: UTF8.self).split(separator: "\n").map(String.init)
        return names.isEmpty ? nil : names
    }

    private static func removeAll(in directory: String) {
        for name in Directories.names(in: directory) { removeTree(directory + "/" + name) }
    }

    private static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            removeAll(in: path)
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
