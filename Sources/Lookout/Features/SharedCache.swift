import LookoutCache
import Synchronization
import LookoutModel
import LookoutUpstream
import LookoutSync

/// The session's RFC 9111 shared cache: the store, the per-host policy, and the figures for
/// `lookout cache stats` and the status page. Exchanges use it through `ExchangeCache`.
package final class SharedCache: Sendable {
    package let store: CacheStore
    package let handler: CachedResponseHandler
    /// URLs being fetched into the store, which concurrent misses follow instead of fetching.
    package let fills = CacheFills()

    /// Lookups since start, by outcome.
    package let hits = Atomic<UInt64>(0)
    package let misses = Atomic<UInt64>(0)
    package let revalidations = Atomic<UInt64>(0)
    package let staleServed = Atomic<UInt64>(0)
    package let bypasses = Atomic<UInt64>(0)
    package let collapsed = Atomic<UInt64>(0)
    package let stores = Atomic<UInt64>(0)

    /// Opens the store; evictions and damaged files found later are posted as `cache.didEvict`.
    init(settings: CacheSettings, handler: CachedResponseHandler, monitor: CompositeEventMonitor) throws {
        self.handler = handler
        self.store = try CacheStore(directory: settings.directory, limits: settings.limits) { notice in
            guard monitor.wants(CacheDidEvict.interest) else { return }
            let event: CacheDidEvict
            switch notice {
            case let .evicted(url, key, bytes):
                event = CacheDidEvict(url: url, object: key.description, bytes: bytes, reason: "size_limit")
            case let .removedCorrupt(key, reason):
                event = CacheDidEvict(url: nil, object: key.description, bytes: -1, reason: "corrupt: \(reason)")
            }
            monitor.post(LookoutEvent(EventContext(connectionID: 0), event))
        }
    }

    /// URLs with a background revalidation running (stale-while-revalidate), at most one each.
    private let revalidating = Guarded<Set<String>>([])

    func beginRevalidating(_ url: String) -> Bool {
        revalidating.withLock { $0.insert(url).inserted }
    }

    func endRevalidating(_ url: String) {
        _ = revalidating.withLock { $0.remove(url) }
    }

    /// Served from the store (fresh or accepted stale, and revalidated) over every lookup.
    var hitRatio: Double {
        let served = hits.load(ordering: .relaxed) + staleServed.load(ordering: .relaxed) + revalidations.load(ordering: .relaxed)
        let all = served + misses.load(ordering: .relaxed)
        return all == 0 ? 0 : Double(served) / Double(all)
    }
}
