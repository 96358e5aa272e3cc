import Testing
@testable import Lookout
@testable import LookoutModel

/// A stage's part of the record, as the exchange writes it: each `StageRecord` case sets the field
/// it names, the additive ones add.
@Suite struct StageRecordTests {
    private func summary() -> ExchangeSummary {
        ExchangeSummary(requestID: 1, connectionID: 1, clientAddress: "127.0.0.1:5000", kind: .http, method: "GET",
                        url: "http://a.test/x", httpVersion: "HTTP/1.1", start: .now())
    }

    @Test func eachPartSetsItsField() {
        var s = summary()
        s.apply(.mapped(from: "http://a.test/x", to: "http://b.test/y"))
        #expect(s.mappedFrom == "http://a.test/x" && s.url == "http://b.test/y")
        s.apply(.shaping(ShapingSummary(rule: "slow", profile: "3g", latencyMilliseconds: 5, downloadKbps: 1, uploadKbps: 1)))
        s.apply(.fault("reset"))
        #expect(s.shaping?.rule == "slow" && s.shaping?.faults == ["reset"])
        s.apply(.cache(CacheSummary(status: "hit", age: 3)))
        #expect(s.cache?.status == "hit" && s.cache?.age == 3)
        s.apply(.simulated(recording: "rec.har", entry: 4))
        #expect(s.simulated?.recording == "rec.har" && s.simulated?.entry == 4)
    }

    @Test func heldTimeAndFindingsAddUp() {
        var s = summary()
        s.apply(.held(milliseconds: 0, modifiedBy: "breakpoint:1"))
        #expect(s.heldMilliseconds == nil && s.modifiedBy == ["breakpoint:1"])
        s.apply(.held(milliseconds: 20, modifiedBy: "operator:127.0.0.1"))
        s.apply(.held(milliseconds: 5, modifiedBy: "breakpoint:1"))
        #expect(s.heldMilliseconds == 25 && s.modifiedBy == ["breakpoint:1", "operator:127.0.0.1"], "each name once")
        let finding = AuditFinding(id: "cookie-without-secure", severity: .low, cwe: 614, evidence: "sid")
        s.apply(.findings([finding]))
        s.apply(.findings([finding]))
        #expect(s.findings.count == 2)
        s.apply(.fault("status"))
        #expect(s.shaping?.faults == nil, "a fault without a shaping record changes nothing")
    }
}
