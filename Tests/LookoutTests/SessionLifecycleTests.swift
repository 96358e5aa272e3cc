import Dispatch
import Synchronization
import LookoutTLS
import Testing
@testable import Lookout
import LookoutStages
@testable import LookoutUpstream
@testable import LookoutModel

private final class EventLog: @unchecked Sendable {
    let events = Mutex<[LookoutEvent]>([])
    func names(forRequest id: UInt64) -> [String] {
        events.withLock { $0.filter { $0.context.requestID == id }.map(\.name) }
    }

    var summaries: [ExchangeSummary] {
        events.withLock { $0.compactMap { event -> ExchangeSummary? in
            event.kind(RequestDidFinish.self)?.summary
        } }
    }
}

@Suite(.serialized) struct SessionLifecycleTests {
    private func runSession(retryRules: HostRuleSet<RetryRule> = .empty,
                            _ body: (Session, Int) throws -> Void) async throws -> EventLog {
        var configuration = SessionConfiguration()
        configuration.retryRules = retryRules
        configuration.listen = [("127.0.0.1", 0)]
        configuration.eventLoopCount = 2
        let log = EventLog()
        let monitor = ClosureEventMonitor { event in log.events.withLock { $0.append(event) } }
        let session = try Session(configuration: configuration, monitors: [monitor])
        let port = try session.start()[0].port
        try body(session, port)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            session.shutdown { done.resume() }
        }
        return log
    }

    @Test func aForwardedExchangeHasACompleteOrderedLifecycle() async throws {
        let origin = try BlockingOrigin(response: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        defer { origin.stop() }
        var response = ""
        let log = try await runSession { _, port in
            response = blockingExchange(port: port, request:
                "GET http://127.0.0.1:\(origin.port)/x HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nConnection: close\r\n\r\n")
        }
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.hasSuffix("\r\n\r\nhello"))
        #expect(response.contains("Via: 1.1 lookout\r\n"))
        let finished = log.summaries
        #expect(finished.count == 1)
        let summary = try #require(finished.first)
        #expect(summary.status == 200)
        #expect(summary.error == nil)
        #expect(summary.upstream?.responseBodyBytes == 5)
        let names = log.names(forRequest: summary.requestID)
        #expect(names.first == "request.didCreateInitialRequest")
        #expect(names.last == "request.didFinish")
        #expect(names.filter { $0 == "request.didCreateInitialRequest" }.count == 1)
        #expect(names.filter { $0 == "request.didFinish" }.count == 1)
        let expectedOrder = ["request.didCreateInitialRequest", "request.didAuthorize", "request.didAdaptRequest",
                             "task.didCreateTask", "task.didResolve", "task.didConnect", "task.didReceiveResponse",
                             "task.didReceiveData", "task.didGatherMetrics", "task.didComplete", "request.didFinish"]
        #expect(names == expectedOrder)
    }

    @Test func aRefusedUpstreamFailsWithAGatewayErrorAndAFullLifecycle() async throws {
        var response = ""
        let log = try await runSession { _, port in
            // Chosen once the proxy listens, so the proxy cannot be handed this port itself.
            let deadPort = unusedLoopbackPort()
            response = blockingExchange(port: port, request:
                "GET http://127.0.0.1:\(deadPort)/ HTTP/1.1\r\nHost: 127.0.0.1:\(deadPort)\r\n\r\n")
        }
        #expect(response.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(response.contains("X-Lookout-Error: upstream_connect_failed\r\n"))
        let summary = try #require(log.summaries.first)
        #expect(summary.error?.code == "upstream_connect_failed")
        let names = log.names(forRequest: summary.requestID)
        #expect(names.first == "request.didCreateInitialRequest")
        #expect(names.last == "request.didFinish")
        #expect(names.contains("task.didComplete"))
    }

    @Test func retriesAreAttemptsOfOneExchangeEachWithItsTransaction() async throws {
        var rule = RetryRule()
        rule.limit = 2
        rule.backoffBase = 0.01
        rule.jitter = false
        var response = ""
        let log = try await runSession(retryRules: HostRuleSet([([try HostPattern("127.0.0.1")], rule)])) { _, port in
            let deadPort = unusedLoopbackPort()
            response = blockingExchange(port: port, request:
                "GET http://127.0.0.1:\(deadPort)/ HTTP/1.1\r\nHost: 127.0.0.1:\(deadPort)\r\n\r\n")
        }
        #expect(response.contains("X-Lookout-Error: upstream_connect_failed\r\n"))
        let summary = try #require(log.summaries.first)
        #expect(summary.attempts == 3)
        #expect(summary.transactions.map(\.errorCode) == Array(repeating: "upstream_connect_failed", count: 3))
        #expect(summary.upstream?.fetchStart == summary.transactions.last?.fetchStart)
        let names = log.names(forRequest: summary.requestID)
        // Each attempt is a whole task before the next one begins.
        let attempt = ["task.didCreateTask", "task.didResolve", "task.didGatherMetrics", "task.didComplete"]
        #expect(names == ["request.didCreateInitialRequest", "request.didAuthorize", "request.didAdaptRequest"]
                + attempt + ["request.isRetrying"] + attempt + ["request.isRetrying"] + attempt + ["request.didFinish"])
        let gathered = log.events.withLock { events in
            events.compactMap { $0.kind(TaskDidGatherMetrics.self)?.metrics.transactions.count }
        }
        #expect(gathered == [1, 2, 3])
        let retries = log.events.withLock { $0.compactMap { $0.kind(RequestIsRetrying.self) } }
        #expect(retries.map(\.attempt) == [2, 3])
        #expect(retries.map(\.delay) == [0.01, 0.02])
        #expect(retries.allSatisfy { $0.reason == "upstream_connect_failed" })
    }

    @Test func aMalformedHeadIsRejectedWithItsCode() async throws {
        var response = ""
        let log = try await runSession { _, port in
            response = blockingExchange(port: port, request:
                "POST http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
        }
        #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(response.contains("X-Lookout-Error: conflicting_framing\r\n"))
        let failed = log.events.withLock { $0.filter { $0.name == "request.didFailToCreateRequest" } }
        #expect(failed.count == 1)
    }
}
