import Lookout
import HTTPTypes
import LookoutAdmin
import LookoutModel

/// Hands the exchange to the hooks its filter matches, one after the other in config order, at the
/// request (before it goes upstream) and at the response (before the client gets it): each may let
/// it go on, change it, answer it or abort it. The message is held with its body meanwhile (up to
/// the largest `max_body_bytes` of the hooks called); a hook that fails costs at most its
/// `timeout_ms` and then follows its `on_failure`. One per exchange, made only when hooks exist.
final class HookStage: ExchangeStage, @unchecked Sendable {  // confined to the exchange's loop queue
    private let hooks: Hooks
    /// The hooks still to call at the current phase.
    private var pending: [Hooks.Hook] = []
    private var atRequest = true
    /// The held body as the hooks see it (a hook's edit replaces it for the next).
    private var body: [UInt8] = []
    private var complete = false
    /// A hook answered at the request: the answer is the hooks' own, and is not shown to them again.
    private var answered = false

    init(hooks: Hooks) {
        self.hooks = hooks
    }

    var heldPhase: String { "hook_" + (atRequest ? "request" : "response") }

    func requestHead(_ exchange: StageContext) -> StageVerdict {
        hold(hooks.matching(ExchangeFilterSubject(exchange, status: nil, responseFields: nil), request: true), atRequest: true)
    }

    func responseHead(_ response: inout StageResponseHead, exchange: StageContext) -> ResponseVerdict {
        guard response.status != 101, !answered else { return .proceed }
        let subject = ExchangeFilterSubject(exchange, status: response.status, responseFields: response.fields)
        guard case .holdWithBody(let limit, let deadline) = hold(hooks.matching(subject, request: false), atRequest: false) else {
            return .proceed
        }
        return .holdWithBody(limit: limit, deadline: deadline)
    }

    /// Holds for the matching hooks, with a deadline past which none of them can still be running.
    private func hold(_ matching: [Hooks.Hook], atRequest: Bool) -> StageVerdict {
        guard !matching.isEmpty else { return .proceed }
        pending = matching
        self.atRequest = atRequest
        let limit = matching.map(\.settings.maxBodyBytes).max() ?? 0
        let deadline = Double(matching.map(\.settings.timeoutMilliseconds).reduce(0, +)) / 1000 + 5
        return .holdWithBody(limit: limit, deadline: deadline)
    }

    func requestBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {
        self.body = body
        self.complete = complete
        callNext(exchange)
    }

    func responseBodyHeld(_ body: [UInt8], complete: Bool, exchange: StageContext) {
        self.body = body
        self.complete = complete
        callNext(exchange)
    }

    // MARK: - Calls

    private func callNext(_ exchange: StageContext) {
        guard !pending.isEmpty else {
            exchange.resume(.proceed, from: self)
            return
        }
        let hook = pending.removeFirst()
        let sendsBody = complete && body.count <= hook.settings.maxBodyBytes
        let phase = atRequest ? "request" : "response"
        let head = exchange.requestHead
        let requestFields = head.headerFields.map { ($0.name.canonicalName, $0.value) }
        var request = HookMessage(method: head.method.rawValue, url: exchange.facts.route.url, headers: requestFields,
                                  body: atRequest && sendsBody ? body : nil, bodyTruncated: atRequest && !sendsBody)
        var response: HookMessage?
        if !atRequest, let held = exchange.heldResponse {
            response = HookMessage(status: held.status, headers: held.fields.map { ($0.name.canonicalName, $0.value) },
                                   body: sendsBody ? body : nil, bodyTruncated: !sendsBody)
            // The request's body went upstream already: the hook sees the request's head.
            request.bodyTruncated = false
        }
        let message = HookProtocol.call(phase: phase, id: exchange.facts.requestID, hook: hook.settings.name, request: request,
                                        response: response)
        let start = Instant.now()
        let loop = exchange.facts.loop
        hook.transport.call(message, key: HookCallKey(id: exchange.facts.requestID, phase: phase)) { [weak self, weak exchange] result in
            loop.execute { [weak self, weak exchange] in
                guard let self, let exchange else { return }
                self.replied(result, from: hook, sentBody: sendsBody, start: start, exchange: exchange)
            }
        }
    }

    private func replied(_ result: Result<[UInt8], HookFailure>, from hook: Hooks.Hook, sentBody: Bool, start: Instant,
                         exchange: StageContext) {
        let reply: HookReply
        switch result {
        case .failure(let failure):
            return failed(hook, failure.message, start: start, exchange: exchange)
        case .success(let bytes):
            switch HookProtocol.reply(bytes) {
            case .failure(let error): return failed(hook, "its reply is unusable: \(error.message)", start: start, exchange: exchange)
            case .success(let parsed): reply = parsed
            }
        }
        var changes: [String] = []
        let verdict: StageVerdict?
        switch reply {
        case .proceed:
            verdict = nil
        case .modify(let edits):
            if edits.body != nil && !sentBody {
                return failed(hook, "body: it was sent no body (body_truncated), so it cannot replace it", start: start,
                              exchange: exchange)
            }
            if let problem = atRequest ? exchange.editRequest(edits) : exchange.editResponse(edits) {
                return failed(hook, "its edit cannot be applied: \(problem)", start: start, exchange: exchange)
            }
            if let edited = edits.body { body = edited }
            changes = edits.changes
            verdict = nil
        case .answer(let answer):
            changes = ["answer"]
            pending = []
            answered = atRequest
            verdict = .answer(StageAnswer(status: answer.status, headers: answer.headers, body: answer.body,
                                          phase: "hook_answer"))
        case .abort(let reason):
            pending = []
            verdict = .fail(.hookFailed(hook: hook.settings.name, detail: reason))
        }
        exchange.emit(HookDidRun(hook: hook.settings.name, phase: atRequest ? "request" : "response",
                                 milliseconds: Instant.now().milliseconds(since: start), action: reply.action,
                                 changes: changes, error: nil))
        if !changes.isEmpty { exchange.record(.held(milliseconds: 0, modifiedBy: "hook:\(hook.settings.name)")) }
        if let verdict {
            exchange.resume(verdict, from: self)
        } else {
            callNext(exchange)
        }
    }

    /// The call failed: recorded, then `on_failure` — the next hook, or `502 hook_failed`.
    private func failed(_ hook: Hooks.Hook, _ message: String, start: Instant, exchange: StageContext) {
        let goesOn = hook.settings.onFailure == .continue
        exchange.emit(HookDidRun(hook: hook.settings.name, phase: atRequest ? "request" : "response",
                                 milliseconds: Instant.now().milliseconds(since: start),
                                 action: goesOn ? "continue" : "abort", changes: [], error: message))
        if goesOn {
            callNext(exchange)
        } else {
            pending = []
            exchange.resume(.fail(.hookFailed(hook: hook.settings.name, detail: message)), from: self)
        }
    }
}
