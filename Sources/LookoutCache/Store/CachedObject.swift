#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a stored object lives: its URL's hash, and for a varying response its variant's hash.
public struct StoredObjectKey: Hashable, Sendable, CustomStringConvertible {
    public let primary: ObjectID
    public let variant: ObjectID?

    /// `<primary>.obj` or `<primary>.<variant>.obj`.
    public var fileName: String {
        variant.map { "\(primary).\($0).obj" } ?? "\(primary).obj"
    }

    public var description: String { variant.map { "\(primary).\($0)" } ?? primary.description }
}

/// A stored response handed to one exchange: its metadata and its body, in memory or in an open
/// file (the descriptor stays valid if the object is evicted or purged meanwhile).
public final class CachedObject: @unchecked Sendable {  // immutable; read by the one exchange that holds it
    public enum Body {
        case memory([UInt8])
        case file(fd: Int32, offset: Int64)
    }

    public let key: StoredObjectKey
    public let metadata: StoredMetadata
    public let bodyLength: Int64
    public let body: Body
    /// The freshness arithmetic's inputs, worked out once per stored copy.
    public let facts: FreshnessFacts

    init(key: StoredObjectKey, metadata: StoredMetadata, bodyLength: Int64, body: Body, facts: FreshnessFacts? = nil) {
        self.key = key
        self.metadata = metadata
        self.bodyLength = bodyLength
        self.body = body
        self.facts = facts ?? FreshnessFacts(metadata)
    }

    deinit {
        if case .file(let fd, _) = body { _ = close(fd) }
    }

    /// The same body with other metadata (after a 304 updated the stored fields); a file body
    /// gets a descriptor of its own.
    public func replacingMetadata(_ metadata: StoredMetadata) -> CachedObject {
        switch body {
        case .memory:
            return CachedObject(key: key, metadata: metadata, bodyLength: bodyLength, body: body)
        case .file(let fd, let offset):
            return CachedObject(key: key, metadata: metadata, bodyLength: bodyLength, body: .file(fd: dup(fd), offset: offset))
        }
    }

    public var isInMemory: Bool {
        if case .memory = body { return true }
        return false
    }

    /// Copies body bytes from `position` into `buffer`; returns how many (0 at the end or on a
    /// read error — the caller then ends the response short, never pads it).
    public func readBody(at position: Int64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = Int(min(Int64(buffer.count), max(0, bodyLength - position)))
        guard count > 0 else { return 0 }
        switch body {
        case .memory(let bytes):
            bytes.withUnsafeBytes { source in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[Int(position)..<Int(position) + count]))
            }
            return count
        case .file(let fd, let offset):
            return ObjectFile.readAll(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]),
                                      at: offset + position)
        }
    }
}
