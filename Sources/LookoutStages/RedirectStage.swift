import Lookout
import HTTPTypes
import LookoutHTTP
import LookoutModel

/// `redirects.rules` (or the embedder's `RedirectHandler`): a 3xx with a `Location` is passed, its
/// `Location` rewritten, refused, or followed as another attempt (RFC 9110 §15.4). Shared by every
/// exchange.
final class RedirectStage: ExchangeStage, Sendable {
    private let handler: RedirectHandler

    init(handler: RedirectHandler) {
        self.handler = handler
    }

    func attemptResponse(_ response: ResponseHead, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan? {
        let status = response.status
        guard RedirectStatus.isFollowable(status), let location = response.headerFields[.location] else { return nil }
        let outcome = handler.outcome(for: attempt.redirectContext(status: status, location: location))
        exchange.emit(TaskWillPerformRedirect(from: exchange.facts.route.url, to: outcome.target, status: status,
                                              decision: outcome.decision.name, reason: outcome.reason), for: attempt)
        switch outcome.decision {
        case .follow(let url): return .follow(url: url, status: status)
        case .pass(let location): return .forward(location: location)
        case .refuse(let error): return .fail(error)
        }
    }
}
