import LookoutIO
import LookoutModel
import Synchronization
import Testing
@testable import Lookout

/// The session's breakpoints: rules added and removed at run time, the first matching one per
/// phase, and the `max_held` places.
@Suite struct BreakpointsTests {
    @Test func rulesAreNumberedMatchedInOrderAndRemoved() throws {
        let hub = try Breakpoints(settings: BreakpointSettings(rules: [BreakpointRuleSpec(filter: "method:POST")]))
        #expect(hub.hasRules)
        let second = try hub.add(BreakpointRuleSpec(filter: "status:5xx", onRequest: false, onResponse: true))
        #expect(second.id == 2 && second.name == "2: status:5xx")
        #expect(hub.rules.map(\.id) == [1, 2])
        #expect(hub.remove(id: 1) && !hub.remove(id: 1))
        #expect(hub.rules.map(\.id) == [2] && hub.hasRules)
        #expect(hub.remove(id: 2) && !hub.hasRules)
        #expect(try hub.add(BreakpointRuleSpec(filter: "method:GET")).id == 3, "numbers are never reused")
    }

    @Test func badRulesAreRefusedWithTheirField() {
        for (spec, start) in [(BreakpointRuleSpec(filter: "status:abc"), "filter:"),
                              (BreakpointRuleSpec(filter: "method:GET", onRequest: false, onResponse: false), "on:"),
                              (BreakpointRuleSpec(filter: "method:GET", timeout: 0), "timeout:")] {
            do {
                _ = try Breakpoints(settings: BreakpointSettings(rules: [spec]))
                Issue.record("accepted \(spec)")
            } catch {
                #expect(error.message.hasPrefix(start), "\(error.message)")
                #expect(error.description.hasPrefix("breakpoints: "))
            }
        }
    }

    @Test func maxHeldPlacesAreTakenAndFreed() throws {
        let hub = try Breakpoints(settings: BreakpointSettings(maxHeld: 2))
        #expect(hub.reserve(1) && hub.reserve(2))
        #expect(!hub.reserve(3), "two are held already")
        #expect(hub.reserve(2), "one exchange holds one place, whatever it pauses at")
        hub.release(1)
        #expect(hub.reserve(3))
        hub.release(2)
        hub.release(3)
        hub.release(3)
        #expect(hub.reserve(4) && hub.reserve(5) && !hub.reserve(6))
    }

    @Test func anActionOnAnExchangeThatIsNotHeldSaysSo() throws {
        let hub = try Breakpoints(settings: BreakpointSettings())
        let outcome = Mutex<OperatorOutcome?>(nil)
        hub.act(on: 42, .abort, operatorAddress: "127.0.0.1:1") { result in outcome.withLock { $0 = result } }
        #expect(outcome.withLock { $0 } == .notHeld)
        #expect(hub.held.isEmpty && hub.held(id: 42) == nil)
    }
}
