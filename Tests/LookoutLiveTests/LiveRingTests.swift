@testable import LookoutLive
@testable import LookoutModel
import Testing

@Suite struct LiveRingTests {
    private func record(_ sequence: UInt64, _ kind: LiveRecord.Kind = .exchange, exchange: UInt64? = nil) -> LiveRecord {
        LiveRecord(sequence: sequence, kind: kind, exchangeID: exchange ?? sequence, line: Array("{\"n\":\(sequence)}".utf8))
    }

    @Test func keepsTheLastCapacityRecordsOldestFirst() {
        let ring = LiveRing(capacity: 3)
        #expect(ring.all().isEmpty)
        for n in 1...5 { ring.append(record(UInt64(n))) }
        #expect(ring.all().map(\.sequence) == [3, 4, 5])
        #expect(ring.records(after: 3).map(\.sequence) == [4, 5])
        #expect(ring.records(after: 0).map(\.sequence) == [3, 4, 5])
        #expect(ring.records(after: 9).isEmpty)
    }

    @Test func newestFirstWithLimitBeforeAndAFilter() {
        let ring = LiveRing(capacity: 10)
        for n in 1...8 { ring.append(record(UInt64(n), n % 2 == 0 ? .exchange : .lifecycle)) }
        #expect(ring.newest(limit: 2, before: nil) { _ in true }.map(\.sequence) == [8, 7])
        #expect(ring.newest(limit: 10, before: 6) { $0.kind == .exchange }.map(\.sequence) == [4, 2])
        #expect(ring.newest(limit: 10, before: 1) { _ in true }.isEmpty)
    }

    @Test func lineWithSequenceLeadsWithSeq() {
        #expect(String(decoding: record(7).lineWithSequence, as: UTF8.self) == #"{"seq":7,"n":7}"#)
        let empty = LiveRecord(sequence: 2, kind: .notice, exchangeID: nil, line: Array("{}".utf8))
        #expect(String(decoding: empty.lineWithSequence, as: UTF8.self) == #"{"seq":2}"#)
    }

    @Test func recordsSpanningManyBlocksComeBackWhole() {
        let ring = LiveRing(capacity: 1000)
        // About 1.2 MB written through a ring that keeps about 600 KB: blocks fill, wrap and go.
        func line(_ n: Int) -> [UInt8] { Array("{\"n\":\(n),\"pad\":\"\(String(repeating: "x", count: n % 997))\"}".utf8) }
        for n in 1...2000 {
            ring.append(LiveRecord(sequence: UInt64(n), kind: .exchange, exchangeID: UInt64(n % 7), line: line(n)))
        }
        let kept = ring.all()
        #expect(kept.map(\.sequence) == Array(1001...2000).map(UInt64.init))
        #expect(kept.allSatisfy { $0.line == line(Int($0.sequence)) })
        #expect(ring.records(exchange: 3).map(\.sequence) == kept.filter { $0.exchangeID == 3 }.map(\.sequence))
        #expect(ring.records(exchange: 3).allSatisfy { $0.sequence % 7 == 3 })
        // What is mapped stays near what is kept: the kept bytes, the block being written and the spare.
        let keptBytes = kept.reduce(0) { $0 + $1.line.count }
        #expect(ring.mappedBytes <= keptBytes + 3 * LiveRingBlocks.blockSize)
    }

    @Test func aRecordLargerThanABlockGetsItsOwn() {
        let ring = LiveRing(capacity: 3)
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: LiveRingBlocks.blockSize * 2 + 5)
        let medium = [UInt8](repeating: UInt8(ascii: "b"), count: 3000)
        ring.append(record(1))
        ring.append(LiveRecord(sequence: 2, kind: .exchange, exchangeID: 2, line: big))
        ring.append(LiveRecord(sequence: 3, kind: .exchange, exchangeID: 3, line: medium))
        #expect(ring.all().map(\.line) == [record(1).line, big, medium])
        #expect(ring.mappedBytes > 2 * LiveRingBlocks.blockSize)
        // The large block's tail takes what fits; the rest goes to a new standard block.
        for n in 4...6 { ring.append(LiveRecord(sequence: UInt64(n), kind: .exchange, exchangeID: UInt64(n), line: medium)) }
        #expect(ring.all().map(\.sequence) == [4, 5, 6])
        // The large block is unmapped once its records are gone; one standard block and the spare remain.
        #expect(ring.mappedBytes == 2 * LiveRingBlocks.blockSize)
    }

    @Test func anEmptyLineIsKept() {
        let ring = LiveRing(capacity: 2)
        ring.append(LiveRecord(sequence: 1, kind: .notice, exchangeID: nil, line: []))
        #expect(ring.all().map(\.line) == [[]])
    }
}
