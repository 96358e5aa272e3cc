import LookoutModel
import LookoutUpstream

/// What an operator sees of a running exchange (`/exchanges`, the UI's in-flight list): its
/// summary so far, with each stage's part, and the phase it is in.
extension InFlightExchange {
    /// Nil once the exchange has finished.
    init?(_ exchange: Exchange, at now: Instant) {
        guard !exchange.finished else { return nil }
        var snapshot = exchange.summary
        snapshot.end = now
        exchange.forEachStage { $0.inFlight(&snapshot) }
        let phase: String
        let task = exchange.upstream.task
        if let holder = exchange.holding.stage {
            if let task { snapshot.upstream = task.metrics }
            phase = holder.heldPhase
        } else if let task {
            snapshot.upstream = task.metrics
            phase = task.metrics.currentPhase
        } else if exchange.upstream.ledger.waitingForNext {
            phase = "retry_wait"
        } else if exchange.shaping?.response?.isHolding ?? false {
            phase = "shaping_pace"
        } else if case .body(_, let answering)? = exchange.response.reply.producer {
            phase = answering
        } else if case .deferred(let answer)? = exchange.response.reply.producer {
            phase = answer.phase
        } else {
            phase = "starting"
        }
        self.init(summary: snapshot, phase: phase)
    }
}
