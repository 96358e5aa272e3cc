import LookoutSync

/// A bounded, thread-safe LRU cache of minted leaf certificates keyed by normalised host.
///
/// Entries close to expiry are treated as absent, so a long-running proxy re-mints before a
/// client could see an expired leaf.
public final class LeafCertificateCache: Sendable {
    /// One cached leaf: the chain to present (leaf first) and the leaf's private key.
    public struct Entry: Sendable {
        /// Leaf first, then the issuing CA.
        public let chain: [Certificate]
        /// The leaf's private key.
        public let key: PrivateKey

        /// An entry for `chain` (leaf first) and the leaf's `key`.
        public init(chain: [Certificate], key: PrivateKey) {
            self.chain = chain
            self.key = key
        }
    }

    /// The most leaves kept.
    public let capacity: Int
    /// Entries whose leaf expires within this many seconds are not returned.
    public let renewalMargin: Int64
    private let storage: Guarded<LRUDictionary<String, Entry>>

    /// An empty cache holding at most `capacity` (≥ 1) leaves; entries within
    /// `renewalMargin` seconds (default one day) of their leaf's expiry count as absent.
    public init(capacity: Int, renewalMargin: Int64 = 86_400) {
        precondition(capacity >= 1, "LeafCertificateCache capacity must be at least 1")
        self.capacity = capacity
        self.renewalMargin = renewalMargin
        self.storage = Guarded(LRUDictionary(capacity: capacity))
    }

    /// The cached entry for `host` if its leaf is still valid for `renewalMargin` seconds
    /// after `now`; marks it most recently used.
    public func entry(for host: String, now: Int64) -> Entry? {
        let key = HostName.normalize(host)
        return storage.withLock { cache in
            guard let entry = cache.value(for: key) else { return nil }
            guard let leaf = entry.chain.first, leaf.notAfter - renewalMargin > now else {
                cache.remove(key)
                return nil
            }
            return entry
        }
    }

    /// Stores `entry` for `host` unless a usable entry got there first (two threads minting
    /// for the same host at once); returns the entry that is now cached.
    @discardableResult
    public func insert(_ entry: Entry, for host: String, now: Int64) -> Entry {
        let key = HostName.normalize(host)
        return storage.withLock { cache in
            if let existing = cache.peek(key), let leaf = existing.chain.first, leaf.notAfter - renewalMargin > now {
                _ = cache.value(for: key)
                return existing
            }
            cache.set(entry, for: key)
            return entry
        }
    }

    /// The number of cached leaves.
    public var count: Int {
        storage.withLock { $0.count }
    }

    /// Cached hosts, most recently used first.
    public var hosts: [String] {
        storage.withLock { $0.keysByRecency }
    }
}
