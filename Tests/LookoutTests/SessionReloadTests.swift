import LookoutModel
import Testing
@testable import Lookout
import LookoutStages
@testable import LookoutUpstream

/// A reload's new generation: the parts of unchanged sections reused, the rest built anew, the
/// loops given the new environment, and a refused part leaving the running one whole.
@Suite(.serialized) struct SessionReloadTests {
    private func session(_ configure: (inout SessionConfiguration) -> Void = { _ in }) throws -> Session {
        var configuration = SessionConfiguration()
        configuration.listen = [("127.0.0.1", 0)]
        configuration.eventLoopCount = 2
        configure(&configuration)
        return try Session(configuration: configuration, monitors: [])
    }

    /// A session's loops must stop before it goes (its poll threads read them).
    private func stop(_ session: Session) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            session.shutdown { done.resume() }
        }
    }

    @Test func unchangedSectionsKeepTheirPartsAndChangedOnesGetNewOnes() async throws {
        let session = try session()
        let before = session.generation.withLock { $0 }
        var next = session.runningConfiguration
        next.addVia = false
        try session.reload(configuration: next, changed: ["headers"])
        let after = session.generation.withLock { $0 }
        #expect(after !== before)
        #expect(after.trustManager === before.trustManager, "trust did not change")
        #expect(after.hooks === before.hooks && after.upstreamTLS === before.upstreamTLS)
        #expect(after.exchanges.counters === before.exchanges.counters, "ids and gauges go on")
        #expect(after.exchanges !== before.exchanges)
        // Read on each loop, whose state it is, after the reload queued its swap there.
        for context in session.contexts {
            let current = await withCheckedContinuation { (done: CheckedContinuation<ClientEnvironment, Never>) in
                context.loop.execute { done.resume(returning: context.clients) }
            }
            #expect(current === after.clients)
        }
        try session.reload(configuration: next, changed: ["trust", "hooks"])
        let third = session.generation.withLock { $0 }
        #expect(third.trustManager !== after.trustManager && third.hooks !== after.hooks)
        #expect(third.upstreamTLS === after.upstreamTLS, "the engines follow tls and http2 only")
        await stop(session)
    }

    @Test func aRefusedBreakpointRuleLeavesTheRunningGenerationAndRules() async throws {
        let session = try session { $0.breakpoints = BreakpointSettings(rules: [BreakpointRuleSpec(filter: "method:POST")]) }
        let before = session.generation.withLock { $0 }
        var next = session.runningConfiguration
        next.breakpoints = BreakpointSettings(rules: [BreakpointRuleSpec(filter: "method:GET"),
                                                      BreakpointRuleSpec(filter: "status:abc")])
        #expect(throws: (any Error).self) { try session.reload(configuration: next, changed: ["breakpoints"]) }
        #expect(session.generation.withLock { $0 } === before)
        #expect(session.breakpoints.rules.map(\.spec.filter) == ["method:POST"])
        next.breakpoints = BreakpointSettings(rules: [BreakpointRuleSpec(filter: "method:GET")])
        try session.reload(configuration: next, changed: ["breakpoints"])
        #expect(session.breakpoints.rules.map(\.spec.filter) == ["method:GET"])
        #expect(session.breakpoints.rules.map(\.id) == [2], "numbers are never reused")
        await stop(session)
    }
}
