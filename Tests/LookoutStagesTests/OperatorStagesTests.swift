import Foundation
import HTTPTypes
import Testing
@testable import Lookout
@testable import LookoutStages
import LookoutModel

/// The stages an operator or a recording drives: breakpoints and simulate.
@Suite struct OperatorStagesTests {
    private func waitFor(_ condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(5)
        while !condition() && Date() < deadline { usleep(5_000) }
    }

    @Test func aBreakpointHoldsTheMatchingRequestWithItsBodyAndResumesWithTheOperatorsEdits() throws {
        let hub = try Breakpoints(settings: BreakpointSettings(rules: [BreakpointRuleSpec(filter: "method:POST")]))
        let stage = BreakpointStage(hub: hub)
        let handle = TestStageHandle(.post, "http://api.test/orders", framing: .contentLength(2))
        guard case .holdWithBody(let limit, _) = stage.requestHead(handle) else { Issue.record("not held"); return }
        #expect(limit == hub.maxBodyBytes)
        stage.requestBodyHeld(Array("{}".utf8), complete: true, exchange: handle)
        let held = try #require(hub.held(id: 7))
        #expect(held.phase == "request" && held.body == Array("{}".utf8) && held.bodyEditable)
        #expect(handle.events.last is ExchangeDidPause)

        let edits = ExchangeEdits(setHeaders: [(name: "X-Debug", value: "1")])
        guard case .done = stage.act(.resume(edits), by: "127.0.0.1") else { Issue.record("not resumed"); return }
        #expect(handle.requestEdits.count == 1)
        guard case .proceed? = handle.firstResume else { Issue.record("no proceed"); return }
        #expect(handle.summary.modifiedBy == ["breakpoint:1", "operator:127.0.0.1"])
        #expect(hub.held(id: 7) == nil)
        stage.exchangeEnd(handle)

        let get = TestStageHandle(.get, "http://api.test/orders")
        guard case .proceed = BreakpointStage(hub: hub).requestHead(get) else { Issue.record("a GET was held"); return }
    }

    @Test func aBreakpointsInvalidEditIsRefusedAndTheExchangeStaysHeld() throws {
        let hub = try Breakpoints(settings: BreakpointSettings(rules: [BreakpointRuleSpec(filter: "method:POST")]))
        let stage = BreakpointStage(hub: hub)
        let handle = TestStageHandle(.post, "http://api.test/orders", framing: .contentLength(2))
        _ = stage.requestHead(handle)
        stage.requestBodyHeld(Array("{}".utf8), complete: true, exchange: handle)
        handle.editProblem = "headers.set: \"bad name\" is not a field name"
        guard case .invalid(let problem) = stage.act(.resume(ExchangeEdits(setHeaders: [(name: "bad name", value: "1")])),
                                                     by: "127.0.0.1") else { Issue.record("accepted"); return }
        #expect(problem.contains("bad name"))
        #expect(handle.resumeCount == 0 && hub.held(id: 7) != nil)
        stage.exchangeEnd(handle)
        #expect(hub.held(id: 7) == nil)
    }

    @Test func aBreakpointTimeoutAppliesOnTimeout() throws {
        let spec = BreakpointRuleSpec(filter: "method:POST", timeout: 0.05, onTimeout: .abort)
        let hub = try Breakpoints(settings: BreakpointSettings(rules: [spec]))
        let stage = BreakpointStage(hub: hub)
        let handle = TestStageHandle(.post, "http://api.test/orders", framing: .contentLength(2))
        _ = stage.requestHead(handle)
        waitFor { handle.resumeCount > 0 }
        guard case .fail(let error)? = handle.firstResume else { Issue.record("not aborted"); return }
        #expect(error.code == "breakpoint_timeout")
    }

    private func recording() throws -> String {
        let har = """
        {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": [
          {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 5,
           "request": {"method": "GET", "url": "http://api.test/a", "httpVersion": "HTTP/1.1", "headers": [],
                       "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
           "response": {"status": 201, "statusText": "Created", "httpVersion": "HTTP/1.1",
                        "headers": [{"name": "Content-Type", "value": "text/plain"}], "cookies": [],
                        "content": {"size": 5, "mimeType": "text/plain", "text": "hello"}, "redirectURL": "",
                        "headersSize": -1, "bodySize": 5},
           "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 0}}]}}
        """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-sim-\(getpid()).har").path
        try Data(har.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func simulateAnswersFromTheRecordingAndAMissNamesTheClosest() throws {
        let path = try recording()
        defer { try? FileManager.default.removeItem(atPath: path) }
        var settings = SimulateSettings()
        settings.recordings = [path]
        settings.mode = .simulate
        let simulation = try #require(try Simulation(settings: settings))
        let stage = SimulateStage(simulation: simulation)
        let hit = TestStageHandle(.get, "http://api.test/a")
        guard case .answer(let answer) = stage.requestHead(hit) else { Issue.record("no answer"); return }
        #expect(answer.status == 201 && answer.fields[.contentType] == "text/plain")
        guard case .simulated(_, let entry)? = hit.records.first else { Issue.record("no record"); return }
        #expect(entry == 0, "entries are numbered from 0, as the log's simulated.entry")

        guard case .fail(let error) = stage.requestHead(TestStageHandle(.get, "http://api.test/b")) else {
            Issue.record("a miss answered"); return
        }
        #expect(error.code == "simulation_miss")
        #expect(error.message.contains("GET http://api.test/a"))
    }
}
