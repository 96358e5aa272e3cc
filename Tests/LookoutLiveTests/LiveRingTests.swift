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
}
