import Testing
@testable import Lookout
import LookoutUpstream

@Suite struct RecentOriginsTests {
    @Test func sameDestinationSharesOneOrigin() {
        var recent = RecentOrigins()
        let a = recent.origin(host: "example.com", port: 80, isSecure: false, parent: nil, ruleKey: nil)
        let b = recent.origin(host: "example.com", port: 80, isSecure: false, parent: nil, ruleKey: nil)
        #expect(a === b)
        #expect(a.hostFieldValue == "example.com")
    }

    @Test func anyDifferenceInThePoolKeyGivesItsOwnOrigin() {
        var recent = RecentOrigins()
        let plain = recent.origin(host: "example.com", port: 80, isSecure: false, parent: nil, ruleKey: nil)
        let otherPort = recent.origin(host: "example.com", port: 8080, isSecure: false, parent: nil, ruleKey: nil)
        let secure = recent.origin(host: "example.com", port: 80, isSecure: true, parent: nil, ruleKey: nil)
        let otherHost = recent.origin(host: "example.org", port: 80, isSecure: false, parent: nil, ruleKey: nil)
        let parent = ParentProxy(host: "proxy.example", port: 3128)
        let viaParent = recent.origin(host: "example.com", port: 80, isSecure: false, parent: parent, ruleKey: nil)
        let all = [plain, otherPort, secure, otherHost, viaParent]
        for (i, x) in all.enumerated() {
            for y in all[(i + 1)...] { #expect(x !== y && x != y) }
        }
        #expect(viaParent.parent == parent)
        #expect(recent.origin(host: "example.com", port: 80, isSecure: false, parent: parent, ruleKey: nil) === viaParent)
    }

    @Test func holdsOnlyTheEightLatestAndReplacesTheOldestFirst() {
        var recent = RecentOrigins()
        let first = (0..<8).map { recent.origin(host: "h\($0).example", port: 80, isSecure: false, parent: nil, ruleKey: nil) }
        for (i, origin) in first.enumerated() {
            #expect(recent.origin(host: "h\(i).example", port: 80, isSecure: false, parent: nil, ruleKey: nil) === origin)
        }
        _ = recent.origin(host: "ninth.example", port: 80, isSecure: false, parent: nil, ruleKey: nil)
        let again = recent.origin(host: "h0.example", port: 80, isSecure: false, parent: nil, ruleKey: nil)
        #expect(again !== first[0], "the oldest was replaced")
        #expect(again == first[0])
        #expect(recent.origin(host: "h2.example", port: 80, isSecure: false, parent: nil, ruleKey: nil) === first[2])
    }
}
