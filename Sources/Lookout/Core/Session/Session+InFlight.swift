import LookoutAdmin
import LookoutIO
import LookoutModel
import LookoutUpstream
import LookoutSync

extension Session: ExchangeOperator {
    /// Every exchange and tunnel running now, in no particular order. Each loop lists its own on its queue,
    /// so the hot path keeps no shared registry; `completion` runs once all loops have answered,
    /// on the last loop to answer (so it must be short).
    public func inFlightExchanges(completion: @escaping @Sendable ([InFlightExchange]) -> Void) {
        let gathered = InFlightGathering(expected: contexts.count, completion: completion)
        for (context, registry) in zip(contexts, registries) {
            context.loop.execute {
                let now = Instant.now()
                var found: [InFlightExchange] = []
                for client in registry.clients.values {
                    found.append(contentsOf: client.inFlightSnapshots(at: now))
                }
                gathered.add(found)
            }
        }
    }

    /// Cancels the running exchange or tunnel `id` (`DELETE /exchanges/ID`): its client gets
    /// `502 cancelled_by_operator`, or a reset when its response had begun; its upstream is closed;
    /// its record names `operatorAddress`. `completion` gets whether it was found running.
    public func cancelExchange(id: UInt64, operatorAddress: String, completion: @escaping @Sendable (Bool) -> Void) {
        let gathered = InFlightGathering(expected: contexts.count) { (found: [Bool]) in
            completion(found.contains(true))
        }
        for (context, registry) in zip(contexts, registries) {
            context.loop.execute {
                let client = registry.clients.values.first { $0.runs(exchange: id) }
                client?.cancel(exchange: id, error: .cancelledByOperator(operatorAddress: operatorAddress))
                gathered.add([client != nil])
            }
        }
    }
}

/// Collects one answer from each loop, then calls the completion once (from the last loop).
final class InFlightGathering<Element: Sendable>: Sendable {
    private let state: Guarded<(elements: [Element], remaining: Int)>
    private let completion: @Sendable ([Element]) -> Void

    init(expected: Int, completion: @escaping @Sendable ([Element]) -> Void) {
        state = Guarded(([], expected))
        self.completion = completion
    }

    func add(_ found: [Element]) {
        let all: [Element]? = state.withLock { state in
            state.elements += found
            state.remaining -= 1
            return state.remaining == 0 ? state.elements : nil
        }
        if let all { completion(all) }
    }
}
