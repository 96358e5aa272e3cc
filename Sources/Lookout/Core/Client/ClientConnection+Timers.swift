import HTTPTypes
import LookoutHTTP
import LookoutIO
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// The connection's one timer: waiting for a request head to complete, or for the next request.
extension ClientConnection: LoopTimerOwner {
    func loopTimerFired() {
        switch timerPurpose {
        case .idle: idleTimerFired(limit: environment.timeouts.clientIdle)
        case .head: headTimerFired(limit: environment.timeouts.clientHeader)
        }
    }

    func armIdleTimer() {
        headTimerArmed = false
        timerPurpose = .idle
        timer.schedule(after: environment.timeouts.clientIdle)
    }

    func idleTimerFired(limit: Double) {
        // A streamed admin body (live events) is not idle: its heartbeats keep it going.
        guard exchange == nil, tunnel == nil, adminStream == nil, !isClosed else { return }
        if !parser.isIdle {
            armHeadTimer()
            return
        }
        let idleFor = Instant.now().milliseconds(since: lastActivity) / 1000
        if idleFor + 0.01 < limit {
            timer.schedule(after: limit - idleFor)
            return
        }
        close(reason: "idle_timeout")
    }

    func armHeadTimer() {
        headTimerArmed = true
        timerPurpose = .head
        timer.schedule(after: environment.timeouts.clientHeader)
    }

    func headTimerFired(limit: Double) {
        guard exchange == nil, tunnel == nil, adminStream == nil, !isClosed else { return }
        recordFailedRequest(.clientFailed(reason: .headerTimedOut(after: limit)), sendResponse: true)
        closeAfterResponse()
    }
}
