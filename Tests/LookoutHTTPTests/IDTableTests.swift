import LookoutHTTP
import Testing

/// `IDTable` does what a `Dictionary` does with the same operations: the dictionary is the oracle.
@Suite struct IDTableTests {
    /// Random inserts, overwrites, removals and lookups over a small key range (long probe
    /// clusters, removals inside them and across the table's end) and over HTTP/2-like odd ids.
    @Test(arguments: [(range: 0..<40, odd: false), (range: 1..<4_000, odd: true)])
    func agreesWithADictionary(range: Range<Int32>, odd: Bool) {
        var random = SplitMix64(seed: UInt64(range.upperBound))  // fixed: a failure replays
        var table = IDTable<Int32, String>()
        var oracle: [Int32: String] = [:]
        for step in 0..<40_000 {
            var key = Int32.random(in: range, using: &random)
            if odd { key |= 1 }
            switch random.next() % 4 {
            case 0, 1:
                table[key] = "v\(step)"
                oracle[key] = "v\(step)"
            case 2:
                #expect(table.removeValue(forKey: key) == oracle.removeValue(forKey: key))
            default:
                table[key] = nil
                oracle[key] = nil
            }
            #expect(table[key] == oracle[key])
            #expect(table.contains(key) == (oracle[key] != nil))
            #expect(table.count == oracle.count)
            if step % 997 == 0 {
                #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) }) == oracle)
                for probe in range { #expect(table[probe] == oracle[probe]) }
            }
        }
        for (key, value) in oracle { #expect(table[key] == value) }
    }

    @Test func iteratingACopyWhileTheOriginalChanges() {
        var table: IDTable<UInt64, Int> = [1: 10, 3: 30, 5: 50]
        var seen: [UInt64: Int] = [:]
        for (key, value) in table {
            seen[key] = value
            table[key] = nil
            table[key + 100] = value
        }
        #expect(seen == [1: 10, 3: 30, 5: 50])
        #expect(table.count == 3 && table[101] == 10 && table[1] == nil)
        #expect(Set(table.values) == [10, 30, 50])
        table.removeAll()
        #expect(table.isEmpty && table[101] == nil && Array(table).isEmpty)
        table[0] = 7  // key 0 is a key like any other
        #expect(table[0] == 7 && table.count == 1)
    }

    /// A narrower signed key keeps its own bit pattern: -1 and the extremes are keys like others.
    @Test func negativeAndExtremeKeys() {
        var table = IDTable<Int32, Int>()
        for key in [Int32(-1), .min, .max, 0, 1] { table[key] = Int(key) }
        #expect(table.count == 5)
        for key in [Int32(-1), .min, .max, 0, 1] { #expect(table[key] == Int(key)) }
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) })
                == [-1: -1, .min: Int(Int32.min), .max: Int(Int32.max), 0: 0, 1: 1])
        #expect(table.removeValue(forKey: -1) == -1 && table[-1] == nil && table[.max] == Int(Int32.max))
    }
}
