#if canImport(Glibc)
import Glibc
import LookoutModel
import LookoutUpstream
#endif
import HTTPTypes
import LookoutCache
import LookoutIO
import LookoutSync

/// One URL being fetched into the cache while other requests for it wait (RFC 9111 leaves
/// collapsing to the cache; Squid calls it collapsed forwarding).
///
/// The exchange that missed first leads: it fetches and stores as usual and publishes here what
/// it learns — the response head, how much body is in the store's file, how it ended. Requests
/// that miss the same URL meanwhile follow: they make no upstream request and read the body from
/// the file as it grows (`FillFollower`). A follower is told of each change on its own loop, at
/// most once per time it asked (`snapshot(rearm:)`), so a fast fill does not flood slow followers.
package final class CacheFill: @unchecked Sendable {  // state guarded by `lock`
    /// What followers need to answer from the fill.
    package struct Head {
        package let metadata: StoredMetadata
        /// The body's length when the origin announced it.
        package let expectedLength: Int64?
        /// A descriptor on the store's file (closed when the fill goes away), body at `bodyOffset`.
        package let reader: Int32
        package let bodyOffset: Int64

        package init(metadata: StoredMetadata, expectedLength: Int64?, reader: Int32, bodyOffset: Int64) {
            self.metadata = metadata
            self.expectedLength = expectedLength
            self.reader = reader
            self.bodyOffset = bodyOffset
        }
    }

    package enum Ending: Equatable {
        /// The body is complete (and stored).
        case complete
        /// The response is not being stored (not storable, or not for this URL): fetch it yourself.
        case notStored
        /// Storing stopped part-way: followers that sent bytes break off.
        case failed
    }

    package struct Snapshot {
        package var head: Head?
        package var written: Int64 = 0
        package var ending: Ending?
    }

    private struct Follower {
        let loop: EventLoop
        let notify: @Sendable () -> Void
        var armed: Bool
    }

    let url: String
    private let lock = Guarded(())
    private var state = Snapshot()
    private var followers: [UInt64: Follower] = [:]
    private var nextFollower: UInt64 = 0
    private weak var registry: CacheFills?

    init(url: String, registry: CacheFills) {
        self.url = url
        self.registry = registry
    }

    deinit {
        if let reader = state.head?.reader, reader >= 0 { _ = close(reader) }
    }

    // MARK: Followers

    /// Adds a follower, told (on `loop`) at the next change; returns its number.
    package func follow(on loop: EventLoop, notify: @escaping @Sendable () -> Void) -> UInt64 {
        lock.withLock { _ in
            nextFollower += 1
            followers[nextFollower] = Follower(loop: loop, notify: notify, armed: true)
            return nextFollower
        }
    }

    package func unfollow(_ id: UInt64) {
        lock.withLock { _ in _ = followers.removeValue(forKey: id) }
    }

    /// The state now; with `rearm`, the follower is told about the next change.
    package func snapshot(for id: UInt64, rearm: Bool) -> Snapshot {
        lock.withLock { _ in
            if rearm { followers[id]?.armed = true }
            return state
        }
    }

    // MARK: The leader

    package func publish(head: Head) { change { $0.head = head } }

    package func progress(written: Int64) { change { $0.written = written } }

    package func end(_ ending: Ending, now: Double) {
        registry?.remove(self, ending: ending, now: now)
        change { if $0.ending == nil { $0.ending = ending } }
    }

    private func change(_ update: (inout Snapshot) -> Void) {
        let wake: [Follower] = lock.withLock { _ in
            update(&state)
            var wake: [Follower] = []
            for (id, follower) in followers where follower.armed {
                followers[id]?.armed = false
                wake.append(follower)
            }
            return wake
        }
        for follower in wake { follower.loop.execute(follower.notify) }
    }
}

/// The fills in progress, by URL, and the URLs whose last response could not be stored.
///
/// A URL whose response was not storable is not collapsed again for `passDuration` seconds
/// (Varnish's hit-for-miss): otherwise every burst of requests for an uncacheable URL would queue
/// behind one fetch only to fetch one by one after it.
package final class CacheFills: @unchecked Sendable {  // guarded by `lock`
    /// How long a URL whose response was not stored is fetched without collapsing.
    static let passDuration = 60.0
    /// Bounds the remembered URLs; when full, the memory is cleared (it only saves waiting).
    static let maxRemembered = 10_000

    private let lock = Guarded(())
    private var fills: [String: CacheFill] = [:]
    /// URL → until when its misses fetch for themselves (seconds since 1970).
    private var passUntil: [String: Double] = [:]

    package enum Role {
        case lead(CacheFill)
        case follow(CacheFill)
        /// Its last response was not storable: fetch without a fill.
        case pass
    }

    /// Leads a new fill for `url`, follows the one in progress, or passes.
    package func join(url: String, now: Double) -> Role {
        lock.withLock { _ in
            if let fill = fills[url] { return .follow(fill) }
            if let until = passUntil[url] {
                if now < until { return .pass }
                passUntil[url] = nil
            }
            let fill = CacheFill(url: url, registry: self)
            fills[url] = fill
            return .lead(fill)
        }
    }

    /// Later misses start a fill of their own, or pass for a while when it ended unstored.
    func remove(_ fill: CacheFill, ending: CacheFill.Ending, now: Double) {
        lock.withLock { _ in
            if fills[fill.url] === fill { fills[fill.url] = nil }
            if ending == .notStored {
                if passUntil.count >= Self.maxRemembered { passUntil.removeAll(keepingCapacity: true) }
                passUntil[fill.url] = now + Self.passDuration
            } else {
                passUntil[fill.url] = nil
            }
        }
    }
}
