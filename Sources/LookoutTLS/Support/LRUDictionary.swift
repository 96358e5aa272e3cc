/// A dictionary with a fixed capacity that evicts the least recently used entry when full.
///
/// Lookups and inserts are O(1): entries live in an array of nodes linked into a recency
/// list by index. Not synchronised; callers wrap it in a `Mutex`.
struct LRUDictionary<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var newer: Int?
        var older: Int?
    }

    /// The most entries kept.
    let capacity: Int
    private var indices: [Key: Int] = [:]
    private var nodes: [Node] = []
    private var newest: Int?
    private var oldest: Int?

    /// An empty dictionary holding at most `capacity` (≥ 1) entries.
    init(capacity: Int) {
        precondition(capacity >= 1, "an LRU cache needs a capacity of at least 1")
        self.capacity = capacity
        indices.reserveCapacity(min(capacity, 4096))
    }

    /// The number of entries.
    var count: Int { indices.count }

    /// The value for `key`, marking it most recently used.
    mutating func value(for key: Key) -> Value? {
        guard let index = indices[key] else { return nil }
        moveToNewest(index)
        return nodes[index].value
    }

    /// The value for `key` without touching its recency.
    func peek(_ key: Key) -> Value? {
        indices[key].map { nodes[$0].value }
    }

    /// Stores `value` as the most recently used entry, evicting the oldest when full.
    /// Returns the evicted value, if any.
    @discardableResult
    mutating func set(_ value: Value, for key: Key) -> Value? {
        if let index = indices[key] {
            nodes[index].value = value
            moveToNewest(index)
            return nil
        }
        if nodes.count < capacity {
            nodes.append(Node(key: key, value: value, newer: nil, older: nil))
            let index = nodes.count - 1
            indices[key] = index
            linkAsNewest(index)
            return nil
        }
        // Full: reuse the oldest node's slot.
        let index = oldest!
        unlink(index)
        let evicted = nodes[index]
        indices[evicted.key] = nil
        nodes[index] = Node(key: key, value: value, newer: nil, older: nil)
        indices[key] = index
        linkAsNewest(index)
        return evicted.value
    }

    /// Removes `key`; O(n) because the array is compacted. Rare by design (stale entries).
    mutating func remove(_ key: Key) {
        guard indices[key] != nil else { return }
        var kept: [(Key, Value)] = []
        var cursor = oldest
        while let index = cursor {
            if nodes[index].key != key { kept.append((nodes[index].key, nodes[index].value)) }
            cursor = nodes[index].newer
        }
        self = LRUDictionary(capacity: capacity)
        for (k, v) in kept { set(v, for: k) }
    }

    /// Keys from most to least recently used.
    var keysByRecency: [Key] {
        var result: [Key] = []
        var cursor = newest
        while let index = cursor {
            result.append(nodes[index].key)
            cursor = nodes[index].older
        }
        return result
    }

    private mutating func moveToNewest(_ index: Int) {
        guard newest != index else { return }
        unlink(index)
        linkAsNewest(index)
    }

    private mutating func unlink(_ index: Int) {
        let newer = nodes[index].newer
        let older = nodes[index].older
        if let newer { nodes[newer].older = older } else { newest = older }
        if let older { nodes[older].newer = newer } else { oldest = newer }
        nodes[index].newer = nil
        nodes[index].older = nil
    }

    private mutating func linkAsNewest(_ index: Int) {
        nodes[index].older = newest
        nodes[index].newer = nil
        if let newest { nodes[newest].newer = index }
        newest = index
        if oldest == nil { oldest = index }
    }
}
