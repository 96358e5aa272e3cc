import LookoutIO
import LookoutLogQuery
import LookoutModel
import Synchronization
import LookoutSync

/// A held exchange's side of an operator's action: applied on the exchange's loop.
package protocol HeldHandle: AnyObject, Sendable {
    /// Called on the exchange's loop.
    func act(_ action: OperatorAction, by operatorAddress: String) -> OperatorOutcome
}

/// The session's breakpoints — the rules, changed at run time through the admin endpoint — and
/// the exchanges they hold now. Every loop reads it: its state is behind a lock, and the check
/// an exchange makes when no rule exists is one relaxed atomic load.
package final class Breakpoints: Sendable {
    /// A rule with its number (`DELETE /breakpoints/N`) and its parsed filter.
    package struct Rule: Sendable {
        package let id: Int
        package let spec: BreakpointRuleSpec
        let filter: LogFilter
        /// How records name it: "1: method:POST".
        package var name: String { "\(id): \(spec.filter)" }
    }

    struct RuleError: Error, CustomStringConvertible {
        let message: String
        var description: String { "breakpoints: " + message }
    }

    package let maxHeld: Int
    package let maxBodyBytes: Int
    private let ruleCount = Atomic<Int>(0)
    private let slotCount = Atomic<Int>(0)
    /// Bumped whenever the rules change: each loop reads its own copy of them, without the lock,
    /// until this moves.
    private let version = Atomic<Int>(0)
    private let copies: [LoopCopy]
    private let state: Guarded<State>

    /// One loop's copy of the rules (confined to that loop's queue).
    private final class LoopCopy: @unchecked Sendable {
        var version = -1
        var rules: [Rule] = []
    }

    private struct State {
        var rules: [Rule] = []
        var nextID = 1
        /// Exchanges a rule matched that are holding or about to (their body still arriving).
        var reserved: Set<UInt64> = []
        var held: [UInt64: Entry] = [:]
    }

    private struct Entry: Sendable {
        let snapshot: HeldExchange
        let loop: EventLoop
        let handle: any HeldHandle
    }

    /// `loops`: how many event loops read the rules.
    init(settings: BreakpointSettings, loops: Int = 1) throws(RuleError) {
        maxHeld = settings.maxHeld
        maxBodyBytes = settings.maxBodyBytes
        copies = (0..<max(loops, 1)).map { _ in LoopCopy() }
        state = Guarded(State())
        for spec in settings.rules { _ = try add(spec) }
    }

    /// One relaxed load: whether an exchange starting now needs a breakpoint stage.
    package var hasRules: Bool { ruleCount.load(ordering: .relaxed) > 0 }

    // MARK: - Rules

    /// The rule's filter, once the rule is found sound.
    private static func checked(_ spec: BreakpointRuleSpec) throws(RuleError) -> LogFilter {
        let filter: LogFilter
        do { filter = try LogFilter.parse(spec.filter) } catch {
            throw RuleError(message: "filter: \(error.description)")
        }
        guard spec.onRequest || spec.onResponse else { throw RuleError(message: "on: name request, response or both") }
        guard spec.timeout > 0, spec.timeout <= 86_400 else {
            throw RuleError(message: "timeout: seconds between 0 and 86400, got \(spec.timeout)")
        }
        return filter
    }

    @discardableResult
    func add(_ spec: BreakpointRuleSpec) throws(RuleError) -> Rule {
        let filter = try Self.checked(spec)
        let rule = state.withLock { state in
            let rule = Rule(id: state.nextID, spec: spec, filter: filter)
            state.nextID += 1
            state.rules.append(rule)
            return rule
        }
        ruleCount.add(1, ordering: .relaxed)
        version.add(1, ordering: .releasing)
        return rule
    }

    func remove(id: Int) -> Bool {
        let removed = state.withLock { state in
            guard let index = state.rules.firstIndex(where: { $0.id == id }) else { return false }
            state.rules.remove(at: index)
            return true
        }
        if removed {
            ruleCount.subtract(1, ordering: .relaxed)
            version.add(1, ordering: .releasing)
        }
        return removed
    }

    /// A reloaded configuration's rules in place of every rule (those added at run time too); all
    /// are checked before any is replaced. Exchanges already held stay held.
    func replaceRules(with specs: [BreakpointRuleSpec]) throws(RuleError) {
        var filters: [LogFilter] = []
        for spec in specs { filters.append(try Self.checked(spec)) }
        state.withLock { state in
            state.rules = zip(specs, filters).map { spec, filter in
                defer { state.nextID += 1 }
                return Rule(id: state.nextID, spec: spec, filter: filter)
            }
        }
        ruleCount.store(specs.count, ordering: .relaxed)
        version.add(1, ordering: .releasing)
    }

    var rules: [Rule] { state.withLock { $0.rules } }

    /// The first rule for the phase that the subject matches, read from `loop`'s copy of the rules
    /// (called on that loop: every exchange asks, and the loops must not contend for the lock).
    package func match<Subject: FilterSubject>(_ subject: Subject, request: Bool, loop: Int) -> Rule? {
        let copy = copies[loop % copies.count]
        let current = version.load(ordering: .acquiring)
        if copy.version != current {
            copy.rules = state.withLock { $0.rules }
            copy.version = current
        }
        return copy.rules.first { ($0.spec.onRequest && request || $0.spec.onResponse && !request) && $0.filter.matches(subject) }
    }

    // MARK: - Held exchanges

    /// Takes one of the `max_held` places for exchange `id`; false when all are taken.
    package func reserve(_ id: UInt64) -> Bool {
        state.withLock { state in
            guard state.reserved.count < maxHeld || state.reserved.contains(id) else { return false }
            state.reserved.insert(id)
            slotCount.add(1, ordering: .relaxed)
            return true
        }
    }

    /// The exchange is paused: operators see it until `release`.
    package func register(_ snapshot: HeldExchange, loop: EventLoop, handle: any HeldHandle) {
        state.withLock { $0.held[snapshot.id] = Entry(snapshot: snapshot, loop: loop, handle: handle) }
    }

    /// The exchange went on or ended: its place is free again.
    package func release(_ id: UInt64) {
        guard slotCount.load(ordering: .relaxed) > 0 else { return }
        state.withLock { state in
            state.held[id] = nil
            if state.reserved.remove(id) != nil { slotCount.subtract(1, ordering: .relaxed) }
        }
    }

    /// Every exchange held now, oldest first.
    var held: [HeldExchange] {
        state.withLock { Array($0.held.values) }.map(\.snapshot).sorted { $0.since < $1.since }
    }

    func held(id: UInt64) -> HeldExchange? { state.withLock { $0.held[id]?.snapshot } }

    /// Applies an operator's action to held exchange `id`, on its loop; `completion` runs there.
    func act(on id: UInt64, _ action: OperatorAction, operatorAddress: String,
             completion: @escaping @Sendable (OperatorOutcome) -> Void) {
        guard let entry = state.withLock({ $0.held[id] }) else {
            completion(.notHeld)
            return
        }
        entry.loop.execute {
            completion(entry.handle.act(action, by: operatorAddress))
        }
    }
}
