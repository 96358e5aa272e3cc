import Foundation
import HTTPTypes
import Testing
@testable import Lookout
@testable import LookoutStages
import LookoutMessages
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// Map remote and map local, tracing, audit, shaping, messages and capture, each through the test
/// handle.
@Suite struct ExchangeStagesTests {
    private func prefix(_ text: String, secure: Bool = false, host: String = "origin.test", path: String = "/api/") throws
        -> MapRemoteRule.Prefix {
        MapRemoteRule.Prefix(isSecure: secure, host: try HostPattern(host), port: secure ? 443 : 80, path: path, text: text)
    }

    @Test func mapRemoteSendsTheRestOfThePathToTheNewOriginAndRecordsBoth() throws {
        let rule = MapRemoteRule(from: try prefix("http://origin.test/api/"), toHost: "127.0.0.1", toPort: 9000, toIsSecure: false,
                                 toPath: "/v2/", toText: "http://127.0.0.1:9000/v2/", preserveHost: true, allowDowngrade: false)
        let handle = TestStageHandle(.get, "http://origin.test/api/users?id=1")
        guard case .proceed = MapRemoteStage(rule: rule).requestHead(handle) else { Issue.record("not proceeding"); return }
        let reroute = try #require(handle.reroutes.first)
        #expect(reroute.route.url == "http://127.0.0.1:9000/v2/users?id=1")
        #expect(reroute.route.path == "/v2/users?id=1")
        #expect(reroute.hostField == "origin.test")
        #expect(handle.summary.mappedFrom == "http://origin.test/api/users?id=1")
        #expect(handle.summary.url == "http://127.0.0.1:9000/v2/users?id=1")
        #expect(handle.events.first is RequestDidMapRemote)
    }

    @Test func mapRemoteRefusesADowngradeUnlessAllowed() throws {
        let rule = MapRemoteRule(from: try prefix("https://origin.test/api/", secure: true), toHost: "127.0.0.1", toPort: 9000,
                                 toIsSecure: false, toPath: "/", toText: "http://127.0.0.1:9000/", preserveHost: false,
                                 allowDowngrade: false)
        let handle = TestStageHandle(.get, "https://origin.test/api/x")
        guard case .fail(let error) = MapRemoteStage(rule: rule).requestHead(handle) else { Issue.record("not refused"); return }
        #expect(error.code == "map_downgrade_refused")
        #expect(handle.reroutes.isEmpty && handle.records.isEmpty)
    }

    @Test func mapLocalAnswersFromTheFileAndFailsClearlyWithoutIt() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-map-local-\(getpid()).json").path
        try Data("{\"ok\":true}".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let rule = MapLocalRule(from: try prefix("http://origin.test/api/"), file: file, status: 200, contentType: "application/json")
        let handle = TestStageHandle(.get, "http://origin.test/api/x")
        guard case .answer(let answer) = MapLocalStage(rule: rule).requestHead(handle) else { Issue.record("no answer"); return }
        #expect(answer.status == 200 && answer.fields[.contentLength] == "11" && answer.fields[.contentType] == "application/json")
        #expect(answer.body != nil)
        #expect(handle.summary.url == "file://" + file)

        let missing = MapLocalRule(from: try prefix("http://origin.test/api/"), file: file + ".gone", status: 200, contentType: "text/plain")
        guard case .fail(let error) = MapLocalStage(rule: missing).requestHead(TestStageHandle(.get, "http://origin.test/api/x"))
        else { Issue.record("not failed"); return }
        #expect(error.code == "map_local_unreadable")
    }

    @Test func traceStartsATraceOrContinuesTheClientsWhenPropagating() throws {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let handle = TestStageHandle(.get, "http://origin.test/", fields: [TraceFields.parent: parent, TraceFields.state: "a=1"])
        _ = TraceStage(propagate: true, sampleRatio: 1).requestHead(handle)
        let trace = try #require(handle.summary.trace)
        #expect(trace.traceIDHex == "0af7651916cd43dd8448eb211c80319c")
        #expect(trace.traceState == "a=1" && trace.sampled)

        let fresh = TestStageHandle(.get, "http://origin.test/", fields: [TraceFields.parent: parent])
        _ = TraceStage(propagate: false, sampleRatio: 1).requestHead(fresh)
        #expect(try #require(fresh.summary.trace).traceIDHex != "0af7651916cd43dd8448eb211c80319c")
    }

    @Test func auditRecordsFindingsLessTheDisabledOnes() throws {
        let handle = TestStageHandle(.get, "https://shop.test/")
        var response = handle.response(200, [.setCookie: "sid=1; Secure; HttpOnly"])
        let stage = AuditStage(disabled: ["cookie-no-samesite"], rules: HostRuleSet([]), certificateExpiryDays: 30)
        _ = stage.responseHead(&response, exchange: handle)
        let ids = handle.summary.findings.map(\.id)
        #expect(!ids.contains("cookie-no-samesite"))
        #expect(!ids.contains("cookie-no-secure") && !ids.contains("cookie-no-httponly"))
        #expect(handle.events.count == handle.summary.findings.count)
        #expect(handle.events.allSatisfy { $0 is AuditDidFind })
    }

    @Test func shapingRecordsWhatItAppliedInjectsItsStatusAndHoldsForItsLatency() throws {
        let plain = TestStageHandle(.get, "http://slow.test/")
        guard case .proceed = ShapingStage(rule: ShapingRule(name: "slow", downloadKbps: 64)).requestHead(plain) else {
            Issue.record("not proceeding"); return
        }
        #expect(plain.summary.shaping?.rule == "slow" && plain.shapings.count == 1)

        let faulty = TestStageHandle(.get, "http://slow.test/")
        guard case .fail(let error) = ShapingStage(rule: ShapingRule(name: "flaky", faultStatus: 503)).requestHead(faulty) else {
            Issue.record("no injected status"); return
        }
        #expect(error.code == "injected_fault" && error.status == 503)
        #expect(faulty.summary.shaping?.faults == ["status"])

        let late = TestStageHandle(.get, "http://slow.test/")
        let stage = ShapingStage(rule: ShapingRule(name: "late", latency: 0.05))
        guard case .hold = stage.requestHead(late) else { Issue.record("no hold for the latency"); return }
        let deadline = Date().addingTimeInterval(5)
        while late.resumeCount == 0 && Date() < deadline { usleep(5_000) }
        guard case .proceed? = late.firstResume else { Issue.record("not resumed after the latency"); return }
    }

    @Test func messagesAttachAWatchOnlyToAStreamAndRecordItsEvents() throws {
        let stage = MessagesStage(settings: MessagesSettings(), captureStore: nil, capture: nil)
        let plain = TestStageHandle(.get, "http://origin.test/")
        var json = plain.response(200, [.contentType: "application/json"])
        _ = stage.responseHead(&json, exchange: plain)
        #expect(plain.attached.isEmpty)

        let handle = TestStageHandle(.get, "http://origin.test/events")
        var sse = handle.response(200, [.contentType: "text/event-stream"])
        _ = stage.responseHead(&sse, exchange: handle)
        let attached = try #require(handle.attached.first)
        #expect(attached.replacing === stage)
        let watch = try #require(attached.value as? StreamWatchStage)
        let body = Array("data: one\n\ndata: two\n\n".utf8)
        body.withUnsafeBytes { watch.responseBody($0, exchange: handle) }
        watch.responseEnd(trailers: nil, exchange: handle)
        watch.exchangeEnd(handle)
        #expect(handle.events.filter { $0 is StreamDidPassEvent }.count == 2)
        let messages = try #require(handle.summary.messages)
        #expect(messages.protocolName == "sse" && messages.upstreamToClient.count == 2)
    }

    @Test func captureWritesBothBodiesAndRecordsTheirFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-capture-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try BodyCaptureStore(directory: directory, maxTotalBytes: 1 << 20)
        let handle = TestStageHandle(.post, "http://origin.test/upload", framing: .contentLength(5))
        let stage = CaptureStage(store: store, rule: CaptureRule(name: "all"), requestID: 7)
        Array("hello".utf8).withUnsafeBytes { stage.requestBody($0, exchange: handle) }
        stage.requestEnd(exchange: handle)
        var response = handle.response(200)
        _ = stage.responseHead(&response, exchange: handle)
        Array("world!".utf8).withUnsafeBytes { stage.responseBody($0, exchange: handle) }
        stage.responseEnd(trailers: nil, exchange: handle)
        stage.exchangeEnd(handle)
        let capture = try #require(handle.summary.capture)
        #expect(try String(contentsOfFile: try #require(capture.request), encoding: .utf8) == "hello")
        #expect(try String(contentsOfFile: try #require(capture.response), encoding: .utf8) == "world!")
    }
}
