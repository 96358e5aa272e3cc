import HTTPTypes
import Testing
@testable import Lookout
@testable import LookoutStages
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// The stages that change each hop's head: Via, Forwarded, the embedder's adapters, header rules.
@Suite struct HeaderStagesTests {
    @Test func viaNamesLookoutOnEveryHopAndResponse() {
        let handle = TestStageHandle(.get, "http://origin.test/x")
        let stage = ViaStage()
        var request = handle.adaptation()
        stage.upstreamRequest(&request, exchange: handle)
        #expect(request.head.headerFields[values: .via] == ["1.1 lookout"])
        var response = handle.response(200, [.via: "1.0 upstream-cache"])
        guard case .proceed = stage.responseHead(&response, exchange: handle) else { Issue.record("not proceeding"); return }
        // RFC 9110 §7.6.3: each recipient appends its own entry after the ones already there.
        #expect(response.fields[values: .via] == ["1.0 upstream-cache", "1.1 lookout"])
        #expect(handle.records.isEmpty && handle.events.isEmpty)
    }

    @Test func forwardedAppendsAfterTheClientsElementWithoutThePort() {
        let handle = TestStageHandle(.get, "https://origin.test/x", fields: [ForwardedElement.name: "for=192.0.2.1"])
        handle.clientAddress = "[::1]:50000"
        var request = handle.adaptation()
        ForwardedStage().upstreamRequest(&request, exchange: handle)
        #expect(request.head.headerFields[values: ForwardedElement.name] == ["for=192.0.2.1", "for=\"[::1]\";proto=https"])
    }

    struct Tagging: RequestAdapter {
        let tag: String
        func adapt(_ head: inout UpstreamRequestHead) {
            head.headerFields.appendField(HTTPField(name: HTTPField.Name("X-Tag")!, value: tag))
        }
    }

    @Test func adaptersRunInTheOrderGiven() {
        let handle = TestStageHandle(.get, "http://origin.test/x")
        var request = handle.adaptation()
        RequestAdapterStage(adapters: [Tagging(tag: "a"), Tagging(tag: "b")]).upstreamRequest(&request, exchange: handle)
        #expect(request.head.headerFields[values: HTTPField.Name("X-Tag")!] == ["a", "b"])
    }

    private func rules() throws -> HostRuleSet<HeaderRule> {
        let rule = HeaderRule(name: "api", request: HeaderEdits(remove: [.cookie], set: [HTTPField(name: .userAgent, value: "lookout-test")]),
                              response: HeaderEdits(add: [HTTPField(name: HTTPField.Name("X-Seen")!, value: "1")]))
        return HostRuleSet([([try HostPattern("api.test")], rule)])
    }

    @Test func headerRulesEditTheRequestsAndResponsesOfTheirHostOnly() throws {
        let stage = HeaderRulesStage(rules: try rules())
        let handle = TestStageHandle(.get, "http://api.test/x", fields: [.cookie: "a=1", .userAgent: "curl/8"])
        var request = handle.adaptation()
        stage.upstreamRequest(&request, exchange: handle)
        #expect(request.head.headerFields[.cookie] == nil)
        #expect(request.head.headerFields[.userAgent] == "lookout-test")
        #expect(request.rule == "api")
        var response = handle.response(200)
        _ = stage.responseHead(&response, exchange: handle)
        #expect(response.fields[HTTPField.Name("X-Seen")!] == "1")
        #expect(handle.eventNames == ["request.didAdaptResponse"])

        let other = TestStageHandle(.get, "http://other.test/x", fields: [.cookie: "a=1"])
        var untouched = other.adaptation()
        stage.upstreamRequest(&untouched, exchange: other)
        #expect(untouched.head.headerFields[.cookie] == "a=1")
        #expect(untouched.rule == nil)
        var plain = other.response(200)
        _ = stage.responseHead(&plain, exchange: other)
        #expect(plain.fields[HTTPField.Name("X-Seen")!] == nil && other.events.isEmpty)
    }
}
