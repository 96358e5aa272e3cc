import LookoutModel
import LookoutUpstream
/// What the client connection and an operator do to a running exchange from outside: see it,
/// cancel it, abort it, or tell it the client went away.
extension Exchange {
    /// What an operator sees of this exchange now; nil once it has finished.
    func inFlightSnapshot(at now: Instant) -> InFlightExchange? {
        guard !finished else { return nil }
        var snapshot = summary
        snapshot.end = now
        forEachStage { $0.inFlight(&snapshot) }
        let phase: String
        if let holder = holding.stage {
            if let task { snapshot.upstream = task.metrics }
            phase = holder.heldPhase
        } else if let task {
            snapshot.upstream = task.metrics
            phase = task.metrics.currentPhase
        } else if attempts.waitingForNext {
            phase = "retry_wait"
        } else if shaping?.response?.isHolding ?? false {
            phase = "shaping_pace"
        } else if case .body(_, let answering)? = reply.producer {
            phase = answering
        } else if case .deferred(let answer)? = reply.producer {
            phase = answer.phase
        } else {
            phase = "starting"
        }
        return InFlightExchange(summary: snapshot, phase: phase)
    }

    /// Ends the exchange for an operator: an error response if nothing was sent yet, otherwise
    /// the bytes relayed so far and a reset. The running attempt's upstream connection is closed.
    func cancel(_ error: ProxyError) {
        shaping?.response?.cancel()
        fail(error)
    }

    func clientDidClose(_ error: ProxyError) {
        guard !finished else { return }
        stopTask()
        shaping?.response?.cancel()
        finish(error: error, keepAlive: false)
    }

    func abort(_ error: ProxyError) {
        guard !finished else { return }
        stopTask()
        shaping?.response?.cancel()
        if !reply.headSent {
            client.writeError(error, requestID: id)
            summary.status = error.status
        }
        finish(error: error, keepAlive: false)
    }
}
