/// Values by integer id — HTTP/2 stream ids, task and request ids — for the tables an exchange
/// touches several times on its way through a loop. A `Dictionary` hashes each key with SipHash,
/// about 2 % of the loop at 100 HTTP/2 streams; ids are already spread numbers, so one multiply
/// (Fibonacci hashing) places them. Open addressing, linear probing, at most half
/// full; a removal shifts the entries after it back, so no tombstones pile up.
///
/// A value type like `Dictionary`: iterating a copy while the original changes is safe. Order is
/// unspecified. Every key of a type narrower than 64 bits can be stored; of a 64-bit type, all but
/// the one whose bits are all ones (`UInt64.max`, `Int64(-1)`), which no id reaches.
@frozen
public struct IDTable<Key: FixedWidthInteger, Value> {
    /// The key plus one, as a `UInt64`, in each used slot; 0 marks a free one.
    @usableFromInline var tags: [UInt64] = []
    @usableFromInline var slots: [Value?] = []
    @usableFromInline var stored = 0
    /// 64 − log2(capacity): the product's top bits pick the home slot.
    @usableFromInline var shift: UInt64 = 64

    @inlinable public init() {}

    @inlinable public var count: Int { stored }
    @inlinable public var isEmpty: Bool { stored == 0 }

    @inlinable @inline(__always)
    static func tag(_ key: Key) -> UInt64 {
        // The key's own bit pattern (a negative Int32 is not sign-extended), plus one.
        let tag = UInt64(truncatingIfNeeded: Key.Magnitude(truncatingIfNeeded: key)) &+ 1
        precondition(tag != 0, "an IDTable key of all ones")
        return tag
    }

    @inlinable @inline(__always)
    func home(_ tag: UInt64) -> Int {
        Int(truncatingIfNeeded: (tag &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The slot holding `tag`, if any.
    @inlinable @inline(__always)
    func slot(of tag: UInt64) -> Int? {
        guard count > 0 else { return nil }
        let mask = tags.count - 1
        return tags.withUnsafeBufferPointer { tags in
            var index = home(tag)
            while true {
                let found = tags[index]
                if found == tag { return index }
                if found == 0 { return nil }
                index = (index + 1) & mask
            }
        }
    }

    @inlinable public subscript(key: Key) -> Value? {
        get {
            guard let index = slot(of: Self.tag(key)) else { return nil }
            return slots[index]
        }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            insert(newValue, tag: Self.tag(key))
        }
    }

    @inlinable public func contains(_ key: Key) -> Bool { slot(of: Self.tag(key)) != nil }

    @inlinable mutating func insert(_ value: Value, tag: UInt64) {
        if (count + 1) * 2 > tags.count { grow() }
        let mask = tags.count - 1
        var index = home(tag)
        while tags[index] != 0 {
            if tags[index] == tag {
                slots[index] = value
                return
            }
            index = (index + 1) & mask
        }
        tags[index] = tag
        slots[index] = value
        stored += 1
    }

    @inlinable mutating func grow() {
        let capacity = Swift.max(8, tags.count * 2)
        let oldTags = tags
        var oldSlots = slots
        tags = Array(repeating: 0, count: capacity)
        slots = Array(repeating: nil, count: capacity)
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        stored = 0
        for index in oldTags.indices where oldTags[index] != 0 {
            insert(oldSlots[index].take()!, tag: oldTags[index])
        }
    }

    @inlinable @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let index = slot(of: Self.tag(key)) else { return nil }
        let removed = slots[index].take()
        tags[index] = 0
        stored -= 1
        // Backward shift: each entry after the hole that may live there moves up, so every entry
        // stays reachable from its home slot without crossing a free one.
        let mask = tags.count - 1
        var hole = index
        var next = (index + 1) & mask
        while tags[next] != 0 {
            let displaced = (next - home(tags[next])) & mask
            if displaced >= (next - hole) & mask {
                tags[hole] = tags[next]
                slots[hole] = slots[next].take()
                tags[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
        return removed
    }

    @inlinable public mutating func removeAll() {
        tags = []
        slots = []
        stored = 0
        shift = 64
    }

    /// The values, in the table's (unspecified) order.
    @inlinable public var values: LazyMapSequence<IDTable<Key, Value>, Value> { lazy.map(\.value) }
}

extension IDTable: Sequence {
    @frozen
    public struct Iterator: IteratorProtocol {
        @usableFromInline let tags: [UInt64]
        @usableFromInline let slots: [Value?]
        @usableFromInline var index = 0

        @inlinable init(tags: [UInt64], slots: [Value?]) {
            self.tags = tags
            self.slots = slots
        }

        @inlinable public mutating func next() -> (key: Key, value: Value)? {
            while index < tags.count {
                defer { index += 1 }
                if tags[index] != 0, let value = slots[index] {
                    return (Key(truncatingIfNeeded: tags[index] &- 1), value)
                }
            }
            return nil
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(tags: tags, slots: slots) }
    @inlinable public var underestimatedCount: Int { count }
}

extension IDTable: ExpressibleByDictionaryLiteral {
    @inlinable public init(dictionaryLiteral elements: (Key, Value)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }
}

extension IDTable: Sendable where Key: Sendable, Value: Sendable {}
