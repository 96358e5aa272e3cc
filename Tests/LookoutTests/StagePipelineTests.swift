import Dispatch
import HTTPTypes
import LookoutHTTP
import LookoutIO
import Synchronization
import Testing
@testable import Lookout
import LookoutStages
@testable import LookoutUpstream
@testable import LookoutModel
#if canImport(Glibc)
import Glibc
#endif

/// The stage pipeline through a real exchange on a real loop: the order stages are asked in,
/// changes, answers that cut the rest short, holds with and without a deadline, and failures.
@Suite(.serialized) struct StagePipelineTests {
    /// What a test stage saw and did, shared with the test (written on the loop, read after it).
    final class Journal: @unchecked Sendable {  // guarded by `lock`
        private let lock = Mutex<[String]>([])
        func note(_ entry: String) { lock.withLock { $0.append(entry) } }
        var entries: [String] { lock.withLock { $0 } }
    }

    /// A stage whose decisions the test scripts.
    final class ScriptedStage: ExchangeStage, @unchecked Sendable {  // confined to the exchange's loop queue
        let name: String
        let journal: Journal
        var verdict: StageVerdict
        var addRequestField: HTTPField?
        var addResponseField: HTTPField?
        var responseVerdict = ResponseVerdict.proceed
        /// Holds, then lets go with `resumeWith` after this many seconds.
        var resumeAfter: Double?
        var resumeWith = StageVerdict.proceed
        /// Holds the response head, then lets go with `resumeResponseWith` after this many seconds.
        var resumeResponseAfter: Double?
        var resumeResponseWith = StageVerdict.proceed

        init(_ name: String, journal: Journal, verdict: StageVerdict = .proceed) {
            self.name = name
            self.journal = journal
            self.verdict = verdict
        }

        var heldPhase: String { "test_\(name)" }

        func requestHead(_ exchange: StageContext) -> StageVerdict {
            journal.note("\(name).requestHead")
            if let resumeAfter {
                exchange.facts.loop.execute(after: resumeAfter) { [weak exchange, self] in
                    journal.note("\(name).resume")
                    exchange?.resume(resumeWith, from: self)
                }
            }
            return verdict
        }

        func upstreamRequest(_ request: inout UpstreamAdaptation, exchange: StageContext) {
            journal.note("\(name).upstreamRequest")
            if let addRequestField { request.head.headerFields.append(addRequestField) }
        }

        func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
            journal.note("\(name).responseHead")
            if let addResponseField { response.fields.append(addResponseField) }
            if let resumeResponseAfter {
                exchange.facts.loop.execute(after: resumeResponseAfter) { [weak exchange, self] in
                    journal.note("\(name).resumeResponse")
                    exchange?.resume(resumeResponseWith, from: self)
                }
            }
            return responseVerdict
        }

        func responseBody(_ bytes: UnsafeRawBufferPointer, exchange: StageContext) {
            journal.note("\(name).responseBody(\(bytes.count))")
        }

        func exchangeEnd(_ exchange: StageContext) {
            journal.note("\(name).exchangeEnd")
        }
    }

    /// An answer body from memory.
    final class BytesSource: ResponseBodySource, @unchecked Sendable {  // confined to the exchange's loop queue
        let bytes: [UInt8]
        init(_ text: String) { bytes = Array(text.utf8) }
        func send(to client: ClientResponseWriter, observe: (UnsafeRawBufferPointer) -> Void) -> BodyProgress {
            bytes.withUnsafeBytes { observe($0); client.writeBody($0) }
            return .done
        }
        var failure: ProxyError { .sessionUnavailable(reason: .shuttingDown) }
    }

    /// The client side: what was written, and when the exchange ended.
    final class Client: ClientResponseWriter, ExchangeDelegate, @unchecked Sendable {  // written on the loop, read after `ended`
        /// When the head was written.
        var headAt: Instant?
        var status: Int?
        var fields = HTTPFields()
        var body: [UInt8] = []
        var error: ProxyError?
        var ended = DispatchSemaphore(value: 0)

        func writeInformational(status: Int, reasonPhrase: String, fields: HTTPFields) {}
        func writeHead(status: Int, reasonPhrase: String, fields: HTTPFields, framing: ClientFraming) {
            headAt = .now()
            self.status = status
            self.fields = fields
        }
        func writeBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
            body += bytes
            return true
        }
        func writeEnd(trailers: HTTPFields?) {}
        func writeError(_ error: ProxyError, requestID: UInt64) { self.error = error }
        var switchableStream: ByteStream? { nil }

        func exchangeCanTakeInput() {}
        func exchangeDidFinish(keepAlive: Bool) { ended.signal() }
        func exchangeDidBreakOff() { ended.signal() }
        func exchangeDidSwitchProtocols(to tunnel: Tunnel) {}
        func tunnelDidFinish(upstreamFailed: Bool) {}
        var isClosingAfterExchange: Bool { true }
    }

    final class Summaries: @unchecked Sendable {  // guarded by `lock`
        private let lock = Mutex<[ExchangeSummary]>([])
        func add(_ summary: ExchangeSummary) { lock.withLock { $0.append(summary) } }
        var all: [ExchangeSummary] { lock.withLock { $0 } }
    }

    /// Runs one GET for `url` through `stages` on a session's loop and waits for its end, on a
    /// Dispatch thread: a wait on the cooperative pool would hold back every other suite's tasks.
    private func run(_ stages: [any ExchangeStage], url: String = "http://127.0.0.1:9/x", port: Int = 9,
                     whileRunning: ((Exchange) -> Void)? = nil) async throws -> (Client, ExchangeSummary?) {
        let work = Unchecked { try self.runBlocking(stages, url: url, port: port, whileRunning: whileRunning) }
        let result: Unchecked<Result<(Client, ExchangeSummary?), any Error>> = await withCheckedContinuation { done in
            DispatchQueue.global().async { done.resume(returning: Unchecked(Result { try work.value() })) }
        }
        return try result.value.get()
    }

    private func runBlocking(_ stages: [any ExchangeStage], url: String, port: Int,
                             whileRunning: ((Exchange) -> Void)?) throws -> (Client, ExchangeSummary?) {
        var configuration = SessionConfiguration()
        configuration.eventLoopCount = 1
        let summaries = Summaries()
        let monitor = ClosureEventMonitor { event in
            if let summary = event.kind(RequestDidFinish.self)?.summary { summaries.add(summary) }
        }
        let session = try Session(configuration: configuration, monitors: [monitor])
        let context = session.contexts[0]
        let client = Client()
        let head = RequestHead(method: .get, rawTarget: url,
                               target: .absolute(scheme: "http", host: "127.0.0.1", port: port, path: "/x"),
                               version: .http1_1, headerFields: [.host: "127.0.0.1:\(port)"], framing: .none,
                               keepAlive: true, expectsContinue: false, upgrade: nil, headLength: 0)
        let records = ExchangeRecords(environment: session.exchanges, connectionID: 1, clientAddress: "127.0.0.1:1")
        let exchange = Exchange(id: 1, context: context, client: client, delegate: client,
                                records: records, head: head, origin: Origin(host: "127.0.0.1", port: port),
                                path: "/x", url: url, kind: .http)
        context.loop.execute { exchange.start(stages: stages) }
        if let whileRunning { whileRunning(exchange) }
        #expect(client.ended.wait(timeout: .now() + 10) == .success)
        session.monitor.flush()
        // The loop keeps the exchange until its last turn: read its results on the loop.
        let done = DispatchSemaphore(value: 0)
        context.loop.execute { done.signal() }
        done.wait()
        let closed = DispatchSemaphore(value: 0)
        session.shutdown { closed.signal() }
        closed.wait()
        return (client, summaries.all.first)
    }

    /// Carries a value the tests hand between threads themselves.
    struct Unchecked<Value>: @unchecked Sendable {  // handed over once, then used by one thread
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private static func okAnswer(_ text: String) -> StageVerdict {
        .answer(StageAnswer(status: 200, reasonPhrase: "OK", fields: [.contentLength: String(text.utf8.count)],
                            framing: .contentLength, body: BytesSource(text)))
    }

    @Test func stagesAreAskedInOrderAndAnAnswerCutsTheRestShort() async throws {
        let journal = Journal()
        let stages = [ScriptedStage("a", journal: journal), ScriptedStage("b", journal: journal, verdict: Self.okAnswer("hi")),
                      ScriptedStage("c", journal: journal)]
        let (client, summary) = try await run(stages)
        #expect(client.status == 200)
        #expect(String(decoding: client.body, as: UTF8.self) == "hi")
        #expect(journal.entries == ["a.requestHead", "b.requestHead",
                                    "a.responseHead", "b.responseHead", "c.responseHead",
                                    "a.responseBody(2)", "b.responseBody(2)", "c.responseBody(2)",
                                    "a.exchangeEnd", "b.exchangeEnd", "c.exchangeEnd"])
        #expect(summary?.status == 200)
        #expect(summary?.attempts == 0, "an answer sends nothing upstream")
    }

    @Test func stagesChangeTheRequestEveryHopAndTheResponseHead() async throws {
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { origin.stop() }
        let journal = Journal()
        let first = ScriptedStage("a", journal: journal)
        first.addRequestField = HTTPField(name: HTTPField.Name("X-Stage")!, value: "a")
        first.addResponseField = HTTPField(name: HTTPField.Name("X-Seen-By")!, value: "a")
        let second = ScriptedStage("b", journal: journal)
        second.addResponseField = HTTPField(name: HTTPField.Name("X-Seen-By")!, value: "b")
        let (client, summary) = try await run([first, second], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        #expect(client.status == 200)
        #expect(String(decoding: client.body, as: UTF8.self) == "ok")
        #expect(client.fields[values: HTTPField.Name("X-Seen-By")!] == ["a", "b"], "in stage order")
        let received = origin.received.withLock { $0 }
        #expect(received.count == 1)
        #expect(received.first?.contains("X-Stage: a\r\n") == true)
        #expect(journal.entries.prefix(4) == ["a.requestHead", "b.requestHead", "a.upstreamRequest", "b.upstreamRequest"])
        #expect(summary?.attempts == 1)
    }

    @Test func aFailingStageEndsTheExchangeWithItsError() async throws {
        let journal = Journal()
        let refusal = ProxyError.accessDenied(reason: .methodNotAllowed(method: "GET", allowed: ["POST"]))
        let stages = [ScriptedStage("a", journal: journal, verdict: .fail(refusal)), ScriptedStage("b", journal: journal)]
        let (client, summary) = try await run(stages)
        #expect(client.error == refusal)
        #expect(client.status == nil)
        #expect(journal.entries == ["a.requestHead", "a.exchangeEnd", "b.exchangeEnd"])
        #expect(summary?.error == refusal)
        #expect(summary?.status == 405)
    }

    @Test func aStageRefusingTheResponseHeadSendsItsErrorInstead() async throws {
        let journal = Journal()
        let refusing = ScriptedStage("a", journal: journal)
        refusing.responseVerdict = .fail(.sessionUnavailable(reason: .shuttingDown))
        let (client, summary) = try await run([refusing, ScriptedStage("b", journal: journal, verdict: Self.okAnswer("no"))])
        #expect(client.status == nil)
        #expect(client.body.isEmpty)
        #expect(client.error?.code == "shutting_down")
        #expect(summary?.error?.code == "shutting_down")
    }

    @Test func aHeldExchangeWaitsAndGoesOnFromTheNextStageWhenResumed() async throws {
        let journal = Journal()
        let holding = ScriptedStage("a", journal: journal, verdict: .hold(deadline: 5))
        holding.resumeAfter = 0.3
        let phases = Mutex<[String]>([])
        let (client, summary) = try await run([holding, ScriptedStage("b", journal: journal, verdict: Self.okAnswer("later"))]) {
            exchange in
            // While held: an operator sees the stage's phase, and nothing went to the client.
            usleep(100_000)
            let seen = DispatchSemaphore(value: 0)
            exchange.context.loop.execute {
                phases.withLock { $0.append(InFlightExchange(exchange, at: .now())?.phase ?? "none") }
                seen.signal()
            }
            seen.wait()
        }
        #expect(phases.withLock { $0 } == ["test_a"])
        #expect(client.status == 200)
        #expect(String(decoding: client.body, as: UTF8.self) == "later")
        #expect(journal.entries.prefix(3) == ["a.requestHead", "a.resume", "b.requestHead"])
        let finished = try #require(summary)
        #expect(finished.end.nanoseconds - finished.start.nanoseconds >= 250_000_000, "held for the 0.3 s")
    }

    @Test func aHoldPastItsDeadlineEndsWithAGatewayTimeout() async throws {
        let journal = Journal()
        let stages = [ScriptedStage("a", journal: journal, verdict: .hold(deadline: 0.2)),
                      ScriptedStage("b", journal: journal, verdict: Self.okAnswer("never"))]
        let (client, summary) = try await run(stages)
        #expect(client.error == .stageHoldTimedOut(stage: "test_a", after: 0.2))
        #expect(client.error?.status == 504)
        #expect(client.error?.code == "stage_hold_timed_out")
        #expect(!journal.entries.contains("b.requestHead"))
        #expect(summary?.error?.code == "stage_hold_timed_out")
    }

    @Test func aLateResumeAfterTheDeadlineIsIgnored() async throws {
        let journal = Journal()
        let holding = ScriptedStage("a", journal: journal, verdict: .hold(deadline: 0.1))
        holding.resumeAfter = 0.4
        let (client, _) = try await run([holding, ScriptedStage("b", journal: journal, verdict: Self.okAnswer("never"))])
        #expect(client.error?.code == "stage_hold_timed_out")
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(journal.entries.contains("a.resume"))
        #expect(!journal.entries.contains("b.requestHead"))
    }

    // MARK: - Holding the response head

    @Test func aHeldResponseHeadWaitsThenGoesOutWithItsBody() async throws {
        let body = String(repeating: "x", count: 200_000)
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nContent-Length: 200000\r\nConnection: close\r\n\r\n" + body)
        defer { origin.stop() }
        let journal = Journal()
        let holding = ScriptedStage("a", journal: journal)
        holding.responseVerdict = .hold(deadline: 5)
        holding.resumeResponseAfter = 0.3
        let later = ScriptedStage("b", journal: journal)
        later.addResponseField = HTTPField(name: HTTPField.Name("X-After-Hold")!, value: "b")
        let phases = Mutex<[String]>([])
        let start = Instant.now()
        let (client, summary) = try await run([holding, later], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port) {
            exchange in
            usleep(150_000)
            let seen = DispatchSemaphore(value: 0)
            exchange.context.loop.execute {
                phases.withLock { $0.append(InFlightExchange(exchange, at: .now())?.phase ?? "none") }
                seen.signal()
            }
            seen.wait()
        }
        #expect(phases.withLock { $0 } == ["test_a"], "an operator sees who holds the response")
        #expect(client.status == 200)
        #expect(client.body.count == 200_000 && client.body.allSatisfy { $0 == UInt8(ascii: "x") }, "every byte, in order")
        #expect(client.fields[HTTPField.Name("X-After-Hold")!] == "b", "the stages after the holding one saw the head")
        let headAt = try #require(client.headAt)
        #expect(headAt.nanoseconds - start.nanoseconds >= 250_000_000, "nothing went out while held")
        #expect(journal.entries.prefix(4) == ["a.requestHead", "b.requestHead", "a.upstreamRequest", "b.upstreamRequest"])
        #expect(journal.entries.contains("a.resumeResponse"))
        #expect(summary?.status == 200 && summary?.error == nil)
    }

    @Test func aHeldResponseHeadPastItsDeadlineIsAGatewayTimeout() async throws {
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { origin.stop() }
        let journal = Journal()
        let holding = ScriptedStage("a", journal: journal)
        holding.responseVerdict = .hold(deadline: 0.2)
        let (client, summary) = try await run([holding], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        #expect(client.status == nil, "the held head never went out")
        #expect(client.error?.code == "stage_hold_timed_out")
        #expect(summary?.error?.code == "stage_hold_timed_out")
    }

    @Test func aHeldResponseCanBeReplacedByAnAnswer() async throws {
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { origin.stop() }
        let journal = Journal()
        let holding = ScriptedStage("a", journal: journal)
        holding.responseVerdict = .hold(deadline: 5)
        holding.resumeResponseAfter = 0.1
        holding.resumeResponseWith = Self.okAnswer("edited")
        let (client, summary) = try await run([holding], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        #expect(client.status == 200)
        #expect(String(decoding: client.body, as: UTF8.self) == "edited")
        #expect(summary?.status == 200 && summary?.error == nil)
    }

    @Test func aHeldAnswerHeadWaitsToo() async throws {
        let journal = Journal()
        let holding = ScriptedStage("a", journal: journal)
        holding.responseVerdict = .hold(deadline: 5)
        holding.resumeResponseAfter = 0.2
        let answering = ScriptedStage("b", journal: journal, verdict: Self.okAnswer("from b"))
        let start = Instant.now()
        let (client, _) = try await run([holding, answering])
        #expect(String(decoding: client.body, as: UTF8.self) == "from b")
        let headAt = try #require(client.headAt)
        #expect(headAt.nanoseconds - start.nanoseconds >= 150_000_000)
    }

    // MARK: - Holding a message with its body

    /// Holds the response (or request) with its body, notes what it got, applies `edits` and lets go.
    final class BodyHoldingStage: ExchangeStage, @unchecked Sendable {  // confined to the exchange's loop queue
        let limit: Int
        let atRequest: Bool
        var edits = ExchangeEdits()
        let seen = Mutex<[(body: [UInt8], complete: Bool, problem: String?)]>([])

        init(limit: Int, atRequest: Bool = false) {
            self.limit = limit
            self.atRequest = atRequest
        }

        func requestHead(_ exchange: StageContext) -> StageVerdict {
            atRequest ? .holdWithBody(limit: limit, deadline: 5) : .proceed
        }
        func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
            atRequest ? .proceed : .holdWithBody(limit: limit, deadline: 5)
        }
        func requestBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {
            letGo(body, complete, exchange.editRequest(edits), exchange)
        }
        func responseBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {
            letGo(body, complete, exchange.editResponse(edits), exchange)
        }
        private func letGo(_ body: [UInt8], _ complete: Bool, _ problem: String?, _ exchange: StageContext) {
            seen.withLock { $0.append((body, complete, problem)) }
            exchange.resume(.proceed, from: self)
        }
    }

    @Test func aResponseHeldWithItsBodyCanBeChangedWhole() async throws {
        let origin = try BlockingOrigin(response: "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nX-Old: 1\r\nConnection: close\r\n\r\nnot found")
        defer { origin.stop() }
        let stage = BodyHoldingStage(limit: 100)
        stage.edits = ExchangeEdits(status: 200, setHeaders: [("X-New", "yes")], removeHeaders: ["X-Old"], body: Array("found!".utf8))
        let (client, summary) = try await run([stage], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        let seen = stage.seen.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.first.map { String(decoding: $0.body, as: UTF8.self) } == "not found")
        #expect(seen.first?.complete == true && seen.first?.problem == nil)
        #expect(client.status == 200)
        #expect(String(decoding: client.body, as: UTF8.self) == "found!")
        #expect(client.fields[.contentLength] == "6", "the length follows the new body")
        #expect(client.fields[HTTPField.Name("X-New")!] == "yes" && client.fields[HTTPField.Name("X-Old")!] == nil)
        #expect(summary?.status == 200)
    }

    @Test func aResponseLongerThanTheLimitIsHeldOnItsHeadAndArrivesWhole() async throws {
        let body = String(repeating: "y", count: 300_000)
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n")
        defer { origin.stop() }
        let stage = BodyHoldingStage(limit: 1000)
        stage.edits = ExchangeEdits(body: Array("short".utf8))
        let (client, _) = try await run([stage], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        let seen = stage.seen.withLock { $0 }
        #expect(seen.first?.complete == false)
        #expect(seen.first?.body.count == 1000, "the stage sees the beginning, up to its limit")
        #expect(seen.first?.problem?.hasPrefix("body:") == true, "a body not held whole cannot be replaced")
        #expect(client.body.count == 300_000 && client.body.allSatisfy { $0 == UInt8(ascii: "y") }, "nothing lost or changed")
    }

    @Test func aRequestHeldWithItsBodyGetsItsEditsUpstream() async throws {
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { origin.stop() }
        let stage = BodyHoldingStage(limit: 100, atRequest: true)
        stage.edits = ExchangeEdits(method: "PUT", setHeaders: [("X-Edited", "1")])
        let (client, summary) = try await run([stage], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        #expect(stage.seen.withLock { $0.map(\.complete) } == [true], "a bodiless request is complete at once")
        #expect(client.status == 200)
        let received = origin.received.withLock { $0 }
        #expect(received.first?.hasPrefix("PUT /x HTTP/1.1\r\n") == true)
        #expect(received.first?.contains("X-Edited: 1\r\n") == true)
        #expect(summary?.method == "GET", "the record keeps what the client sent")
    }

    @Test func invalidEditsNameTheFieldAndChangeNothing() async throws {
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { origin.stop() }
        let stage = BodyHoldingStage(limit: 100)
        stage.edits = ExchangeEdits(status: 99, setHeaders: [("X-A", "1")])
        let (client, _) = try await run([stage], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        #expect(stage.seen.withLock { $0.first?.problem }?.hasPrefix("status:") == true)
        #expect(client.status == 200 && client.fields[HTTPField.Name("X-A")!] == nil)
        let framing = BodyHoldingStage(limit: 100)
        framing.edits = ExchangeEdits(setHeaders: [("Content-Length", "5")])
        _ = try await run([framing], url: "http://127.0.0.1:\(origin.port)/x", port: origin.port)
        #expect(framing.seen.withLock { $0.first?.problem }?.hasPrefix("headers.set:") == true)
    }
}
