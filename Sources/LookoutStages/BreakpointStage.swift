import Lookout
import HTTPTypes
import LookoutIO
import LookoutModel

/// Pauses an exchange a breakpoint matches — before its request goes upstream, before its response
/// reaches the client — with its head and up to `max_body_bytes` of body, until an operator resumes
/// it (with edits), aborts it, answers it, or its timeout applies `on_timeout`. One per exchange,
/// made only while some breakpoint exists.
final class BreakpointStage: ExchangeStage, HeldHandle, @unchecked Sendable {  // confined to the exchange's loop queue
    private let hub: Breakpoints
    /// The exchange, while it is paused here.
    private weak var exchange: (any StageContext)?
    private var rule: Breakpoints.Rule?
    private var atRequest = true
    private var since = Instant(nanoseconds: 0)
    /// Counts pauses, so that a timeout knows whether its pause is still the current one.
    private var generation = 0
    private var requestID: UInt64 = 0
    /// An operator answered at the request: the answer is theirs, and does not pause again.
    private var answered = false

    init(hub: Breakpoints) {
        self.hub = hub
    }

    var heldPhase: String { "breakpoint_" + (atRequest ? "request" : "response") }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        let subject = ExchangeFilterSubject(exchange, status: nil, responseFields: nil)
        guard let rule = hub.match(subject, request: true, loop: subject.facts.loop.index) else { return .proceed }
        return pause(exchange, rule: rule, atRequest: true) ? .holdWithBody(limit: hub.maxBodyBytes, deadline: nil) : .proceed
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        guard !answered else { return .proceed }
        let subject = ExchangeFilterSubject(exchange, status: response.status, responseFields: response.fields)
        guard response.status != 101, let rule = hub.match(subject, request: false, loop: subject.facts.loop.index) else { return .proceed }
        return pause(exchange, rule: rule, atRequest: false) ? .holdWithBody(limit: hub.maxBodyBytes, deadline: nil) : .proceed
    }

    /// Takes a place among the held exchanges and starts the timeout; false when `max_held` are held.
    private func pause(_ exchange: StageContext, rule: Breakpoints.Rule, atRequest: Bool) -> Bool {
        let phase = atRequest ? "request" : "response"
        guard hub.reserve(exchange.facts.requestID) else {
            exchange.emit(ExchangeDidNotPause(phase: phase, rule: rule.name,
                                              reason: "max_held: \(hub.maxHeld) exchanges are held already"))
            return false
        }
        self.exchange = exchange
        self.rule = rule
        self.atRequest = atRequest
        requestID = exchange.facts.requestID
        since = .now()
        generation += 1
        let current = generation
        exchange.facts.loop.execute(after: rule.spec.timeout) { [weak self] in self?.timedOut(current) }
        return true
    }

    func requestBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {
        let head = exchange.requestHead
        paused(body: body, complete: complete, status: nil, fields: head.headerFields, exchange: exchange)
    }

    func responseBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {
        guard let response = exchange.heldResponse else { return }
        paused(body: body, complete: complete, status: response.status, fields: response.fields, exchange: exchange)
    }

    /// The head and body are all here: operators see the exchange, and the record says so.
    private func paused(body: [UInt8], complete: Bool, status: Int?, fields: HTTPFields, exchange: StageContext) {
        guard let rule, self.exchange != nil else { return }
        let snapshot = HeldExchange(id: exchange.facts.requestID, phase: atRequest ? "request" : "response", rule: rule.name,
                                    since: since, timeout: rule.spec.timeout, onTimeout: rule.spec.onTimeout.rawValue,
                                    client: exchange.facts.clientAddress, method: exchange.requestHead.method.rawValue,
                                    url: exchange.facts.route.url, status: status,
                                    headers: fields.map { ($0.name.canonicalName, $0.value) }, body: body,
                                    bodyEditable: complete)
        hub.register(snapshot, loop: exchange.facts.loop, handle: self)
        exchange.emit(ExchangeDidPause(phase: snapshot.phase, rule: rule.name, bodyBytes: body.count, bodyEditable: complete,
                                       timeout: rule.spec.timeout, onTimeout: rule.spec.onTimeout.rawValue))
    }

    // MARK: - Letting go

    func act(_ action: OperatorAction, by operatorAddress: String) -> OperatorOutcome {
        guard let exchange, rule != nil else { return .notHeld }
        var changes: [String] = []
        let verdict: StageVerdict
        switch action {
        case .resume(let edits):
            if !edits.isEmpty {
                if let problem = atRequest ? exchange.editRequest(edits) : exchange.editResponse(edits) {
                    return .invalid(problem)
                }
                changes = edits.changes
            }
            verdict = .proceed
        case .abort:
            verdict = .fail(.abortedByOperator(operatorAddress: operatorAddress))
        case .answer(let answer):
            changes = ["answer"]
            answered = true
            verdict = .answer(StageAnswer(status: answer.status, headers: answer.headers, body: answer.body,
                                          phase: "operator_answer"))
        }
        letGo(verdict, by: operatorAddress, action: action.name, changes: changes, exchange: exchange)
        return .done
    }

    private func timedOut(_ pause: Int) {
        guard pause == generation, let exchange, let rule else { return }
        let verdict: StageVerdict = switch rule.spec.onTimeout {
        case .continue: .proceed
        case .abort: .fail(.breakpointTimedOut(rule: rule.name, after: rule.spec.timeout))
        }
        letGo(verdict, by: "timeout", action: rule.spec.onTimeout == .continue ? "continue" : "abort", changes: [],
              exchange: exchange)
    }

    private func letGo(_ verdict: StageVerdict, by: String, action: String, changes: [String], exchange: StageContext) {
        guard let rule else { return }
        let held = Instant.now().milliseconds(since: since)
        generation += 1
        self.exchange = nil
        self.rule = nil
        hub.release(requestID)
        exchange.emit(ExchangeDidResume(phase: atRequest ? "request" : "response", rule: rule.name, by: by, action: action,
                                        changes: changes, heldMilliseconds: held))
        if !changes.isEmpty {
            exchange.record(.held(milliseconds: 0, modifiedBy: "breakpoint:\(rule.id)"))
            exchange.record(.held(milliseconds: held, modifiedBy: "operator:\(by)"))
        } else {
            exchange.record(.held(milliseconds: held, modifiedBy: nil))
        }
        exchange.resume(verdict, from: self)
    }

    func exchangeEnd(_ ending: StageContext) {
        // Ended while paused (the client left, or an operator cancelled it): no longer held.
        if rule != nil {
            ending.record(.held(milliseconds: Instant.now().milliseconds(since: since), modifiedBy: nil))
            rule = nil
            exchange = nil
            generation += 1
        }
        if requestID != 0 { hub.release(requestID) }
    }
}
