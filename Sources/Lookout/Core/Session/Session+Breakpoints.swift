import LookoutAdmin
import LookoutModel

extension Session: BreakpointOperator {
    public var heldExchanges: [HeldExchange] { breakpoints.held }

    public func heldExchange(id: UInt64) -> HeldExchange? { breakpoints.held(id: id) }

    public func act(onHeld id: UInt64, _ action: OperatorAction, operatorAddress: String,
                    completion: @escaping @Sendable (OperatorOutcome) -> Void) {
        breakpoints.act(on: id, action, operatorAddress: operatorAddress, completion: completion)
    }

    public var breakpointRules: [(id: Int, spec: BreakpointRuleSpec)] {
        breakpoints.rules.map { ($0.id, $0.spec) }
    }

    public func addBreakpoint(_ spec: BreakpointRuleSpec) -> Result<Int, BreakpointRejection> {
        do {
            return .success(try breakpoints.add(spec).id)
        } catch {
            return .failure(BreakpointRejection(error.message))
        }
    }

    public func removeBreakpoint(id: Int) -> Bool { breakpoints.remove(id: id) }
}

extension Session {
    /// Finds exchange `id` among each loop's recent requests and sends it again on that loop.
    public func resend(id: UInt64, edits: ExchangeEdits, operatorAddress: String,
                       completion: @escaping @Sendable (Result<UInt64, ResendRefusal>) -> Void) {
        let answers = InFlightGathering<Result<UInt64, ResendRefusal>>(expected: contexts.count) { found in
            let started = found.first { if case .success = $0 { true } else { false } }
            let refused = found.first { if case .failure(let refusal) = $0 { refusal.status != 404 } else { false } }
            completion(started ?? refused ?? .failure(ResendRefusal(
                status: 404, "exchange \(id) is not among the recent exchanges (the last \(RecentRequests.capacity) of each event loop)")))
        }
        let environment = exchanges
        for context in contexts {
            context.loop.execute {
                guard let entry = context.recentRequests.entry(id: id) else {
                    answers.add([.failure(ResendRefusal(status: 404, ""))])
                    return
                }
                switch ResentExchange.start(entry, edits: edits, operatorAddress: operatorAddress,
                                            environment: environment, context: context) {
                case .success(let newID): answers.add([.success(newID)])
                case .failure(let problem): answers.add([.failure(ResendRefusal(status: problem.status, problem.message))])
                }
            }
        }
    }
}

extension Session {
    /// Reads the `simulate` recordings again (SIGHUP): what happened, for the operational log;
    /// nil when simulation is off. A bad file keeps the recordings read before.
    public func reloadRecordings() -> String? {
        guard let simulation else { return nil }
        do {
            return "simulate: \(try simulation.reload()) recorded exchanges read again"
        } catch {
            return "simulate: the recordings were not read again, the previous ones stay: \(error.description)"
        }
    }
}

extension Session {
    /// Sends a recorded request as an exchange of its own through every rule (`lookout replay`),
    /// on the loops in turn; `completion` gets its answer, or why it could not be sent.
    public func replay(_ request: ReplayRequest, completion: @escaping @Sendable (Result<ReplayResponse, ReplayRefusal>) -> Void) {
        let context = contexts[nextReplayLoop.add(1, ordering: .relaxed).oldValue % contexts.count]
        let environment = exchanges
        context.loop.execute {
            let started = ResentExchange.replay(request, environment: environment, context: context) { response in
                completion(.success(response))
            }
            if case .failure(let refusal) = started { completion(.failure(refusal)) }
        }
    }
}

/// A recorded request that cannot be sent again, and why.
public struct ReplayRefusal: Error, Sendable {
    public let message: String
    public init(message: String) { self.message = message }
}
