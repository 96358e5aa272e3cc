import HTTPTypes
import LookoutModel
import Synchronization
import Testing
@testable import LookoutAdmin

/// The operator pages' JSON, read and written, and their answers to a scripted session.
@Suite struct OperatorEndpointTests {
    @Test func editsAreReadInTheIssueShape() throws {
        let edits = try OperatorJSON.edits(Array("""
        {"method": "PATCH", "url": "https://a.test/x", "headers": {"set": {"X-A": "1"}, "remove": ["X-B"]},
         "body_base64": "aGk=", "status": 201}
        """.utf8))
        #expect(edits.method == "PATCH" && edits.url == "https://a.test/x" && edits.status == 201)
        #expect(edits.setHeaders.map(\.name) == ["X-A"] && edits.setHeaders.map(\.value) == ["1"] && edits.removeHeaders == ["X-B"])
        #expect(edits.body == Array("hi".utf8))
        #expect(edits.changes == ["method", "url", "status", "header:x-a", "header:x-b", "body"])
        #expect(try OperatorJSON.edits([]).isEmpty, "an empty body is no edit")
        let pairs = try OperatorJSON.edits(Array(#"{"headers": {"set": [["X-A", "1"], ["X-A", "2"]]}, "body": "é"}"#.utf8))
        #expect(pairs.setHeaders.map(\.value) == ["1", "2"] && pairs.body == Array("é".utf8))
    }

    @Test func badInputNamesItsField() {
        for (json, field) in [("[1]", ""), (#"{"x": 1}"#, "x"), (#"{"status": "200"}"#, "status"), (#"{"status": 1.5}"#, "status"),
                              (#"{"status": true}"#, "status"), (#"{"headers": {"set": {"A": 1}}}"#, "headers.set"),
                              (#"{"headers": {"add": {}}}"#, "add"), (#"{"body": "a", "body_base64": "YQ=="}"#, "body"),
                              (#"{"body_base64": "%%%"}"#, "body_base64"), (#"{"method": 1}"#, "method")] {
            #expect(throws: OperatorJSON.FieldError.self) { try OperatorJSON.edits(Array(json.utf8)) }
            do { _ = try OperatorJSON.edits(Array(json.utf8)) } catch { #expect(error.field == field, "\(json)") }
        }
        for (json, field) in [(#"{}"#, "status"), (#"{"status": 101}"#, "status"), (#"{"status": 200, "headers": 5}"#, "headers")] {
            do { _ = try OperatorJSON.answer(Array(json.utf8)); Issue.record("accepted \(json)") } catch {
                #expect(error.field == field, "\(json)")
            }
        }
        for (json, field) in [(#"{}"#, "filter"), (#"{"filter": "a:b", "on": "later"}"#, "on"),
                              (#"{"filter": "a:b", "timeout": "long"}"#, "timeout"), (#"{"filter": "a:b", "on_timeout": "x"}"#, "on_timeout")] {
            do { _ = try OperatorJSON.rule(Array(json.utf8)); Issue.record("accepted \(json)") } catch {
                #expect(error.field == field, "\(json)")
            }
        }
    }

    @Test func aHeldExchangeIsWrittenWithItsMessage() {
        let since = Instant.now()
        let request = HeldExchange(id: 7, phase: "request", rule: "1: method:POST", since: since, timeout: 300,
                                   onTimeout: "continue", client: "127.0.0.1:5", method: "POST", url: "http://a.test/x",
                                   status: nil, headers: [("content-type", "text/plain")], body: Array("hi \"x\"".utf8),
                                   bodyEditable: true)
        let text = OperatorJSON.held(request, now: since)
        #expect(text == #"{"id":7,"state":"held","phase":"request","rule":"1: method:POST","held_ms":0,"timeout_s":300.0,"on_timeout":"continue","client":"127.0.0.1:5","request":{"method":"POST","url":"http://a.test/x","headers":[["content-type","text/plain"]],"body_bytes":6,"body_editable":true,"body":"hi \"x\"","body_base64":"aGkgIngi"}}"#)
        var response = request
        response.phase = "response"
        response.status = 503
        response.body = [0xff, 0x00]
        response.bodyEditable = false
        let binary = OperatorJSON.held(response, now: since)
        #expect(binary.contains(#""request":{"method":"POST","url":"http://a.test/x"},"response":{"status":503,"#))
        #expect(binary.contains(#""body_editable":false,"body_base64":"/wA="}"#) && !binary.contains(#""body":"#),
                "a body that is not text is only base64")
    }

    @Test func pagesAskTheSessionAndAnswerItsOutcome() throws {
        let session = ScriptedOperator()
        func ask(_ method: HTTPRequestMethod, _ path: String, _ body: String = "", query: String? = nil) -> (Int, String) {
            let request = AdminRequest(method: method.value, path: path, query: query, headerFields: [:],
                                       statistics: SessionStatistics(), clientAddress: "127.0.0.1:9", breakpoints: session,
                                       body: Array(body.utf8))
            guard let answer = OperatorEndpoint.answer(request) else { return (0, "") }
            guard let deferred = answer.deferred else { return (answer.status, String(decoding: answer.body, as: UTF8.self)) }
            let result = Mutex<(Int, String)>((0, ""))
            deferred { reply in result.withLock { $0 = (reply.status, String(decoding: reply.body, as: UTF8.self)) } }
            return result.withLock { $0 }
        }
        #expect(ask(.get, "/exchanges", query: "state=in_flight").0 == 0, "other lists are the live pages'")
        #expect(ask(.get, "/exchanges/3").0 == 0, "an exchange that is not held is the live pages'")
        #expect(ask(.get, "/exchanges", query: "state=held") == (200, "{\"exchanges\":[]}\n"))
        #expect(ask(.post, "/exchanges/3/resume", #"{"headers": {"set": {"X-A": "1"}}}"#).0 == 200)
        #expect(session.actions.withLock { $0 }.last == .resume(ExchangeEdits(setHeaders: [("X-A", "1")])))
        #expect(ask(.post, "/exchanges/4/abort").0 == 404, "not held")
        session.outcome.withLock { $0 = .invalid("body: too long") }
        let invalid = ask(.post, "/exchanges/3/resume", #"{"body": "x"}"#)
        #expect(invalid.0 == 400 && invalid.1.contains(#""field":"body""#))
        #expect(ask(.get, "/exchanges/3/resume").0 == 405)
        #expect(ask(.post, "/breakpoints", #"{"filter": "method:GET"}"#).0 == 201)
        #expect(ask(.delete, "/breakpoints/9").0 == 404)
        #expect(ask(.post, "/exchanges/3/resend", #"{"status": 200}"#).0 == 400)
        #expect(ask(.post, "/exchanges/3/resend").0 == 202)
    }
}

enum HTTPRequestMethod {
    case get, post, delete
    var value: HTTPRequest.Method { self == .get ? .get : self == .post ? .post : .delete }
}

/// A session whose answers the test sets: exchange 3 is held, the rest are not.
final class ScriptedOperator: BreakpointOperator, @unchecked Sendable {  // guarded by its mutexes
    let actions = Mutex<[OperatorAction]>([])
    let outcome = Mutex<OperatorOutcome>(.done)

    var heldExchanges: [HeldExchange] { [] }
    func heldExchange(id: UInt64) -> HeldExchange? { nil }
    func act(onHeld id: UInt64, _ action: OperatorAction, operatorAddress: String,
             completion: @escaping @Sendable (OperatorOutcome) -> Void) {
        guard id == 3 else { return completion(.notHeld) }
        actions.withLock { $0.append(action) }
        completion(outcome.withLock { $0 })
    }
    var breakpointRules: [(id: Int, spec: BreakpointRuleSpec)] { [] }
    func addBreakpoint(_ spec: BreakpointRuleSpec) -> Result<Int, BreakpointRejection> { .success(1) }
    func removeBreakpoint(id: Int) -> Bool { false }
    func resend(id: UInt64, edits: ExchangeEdits, operatorAddress: String,
                completion: @escaping @Sendable (Result<UInt64, ResendRefusal>) -> Void) {
        completion(.success(10))
    }
}

/// The hooks' wire format.
@Suite struct HookProtocolTests {
    @Test func aCallCarriesThePhaseTheIdAndTheMessages() throws {
        let call = HookProtocol.call(
            phase: "response", id: 12, hook: "h",
            request: HookMessage(method: "GET", url: "http://a.test/x", headers: [("accept", "*/*")], body: nil, bodyTruncated: false),
            response: HookMessage(status: 404, headers: [("content-type", "text/plain")], body: Array("no".utf8),
                                  bodyTruncated: false))
        #expect(String(decoding: call, as: UTF8.self) == #"{"phase":"response","id":12,"hook":"h","request":{"method":"GET","url":"http://a.test/x","headers":[["accept","*/*"]]},"response":{"status":404,"headers":[["content-type","text/plain"]],"body_base64":"bm8="}}"#)
        let truncated = HookProtocol.call(phase: "request", id: 1, hook: "h",
                                          request: HookMessage(method: "POST", url: "u", headers: [], body: nil, bodyTruncated: true),
                                          response: nil)
        #expect(String(decoding: truncated, as: UTF8.self).hasSuffix(#""headers":[],"body_truncated":true}}"#))
    }

    @Test func repliesAreReadOrRefusedWithTheirField() throws {
        #expect(try HookProtocol.reply(Array(#"{"action":"continue","id":3,"phase":"request"}"#.utf8)).get() == .proceed)
        #expect(try HookProtocol.reply(Array(#"{"action":"modify","headers":{"set":{"X-A":"1"}}}"#.utf8)).get()
                == .modify(ExchangeEdits(setHeaders: [("X-A", "1")])))
        #expect(try HookProtocol.reply(Array(#"{"action":"answer","status":204}"#.utf8)).get()
                == .answer(OperatorAnswer(status: 204, headers: [], body: [])))
        #expect(try HookProtocol.reply(Array(#"{"action":"abort","reason":"not signed"}"#.utf8)).get() == .abort(reason: "not signed"))
        for (reply, start) in [(#"{}"#, "action:"), (#"{"action":"explode"}"#, "action:"), ("garbage", "the body"),
                               (#"{"action":"modify","colour":1}"#, "colour:"), (#"{"action":"answer"}"#, "status:")] {
            guard case .failure(let error) = HookProtocol.reply(Array(reply.utf8)) else {
                Issue.record("accepted \(reply)")
                continue
            }
            #expect(error.message.hasPrefix(start), "\(reply): \(error.message)")
        }
        #expect(HookProtocol.replyKey(Array(#"{"action":"continue","id":3,"phase":"request"}"#.utf8))?.id == 3)
        #expect(HookProtocol.replyKey(Array(#"{"action":"continue"}"#.utf8)) == nil)
    }
}
