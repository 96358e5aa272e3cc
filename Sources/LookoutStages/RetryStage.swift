import Lookout
import HTTPTypes
import LookoutHTTP
import LookoutModel

/// `retry.rules` (or the embedder's `RequestRetrier`), and the retries the protocols allow on their
/// own (a refused HTTP/2 stream): a listed status is held back and the request tried again after
/// the backoff, and so is a listed failure before any response reached the client. Shared by every
/// exchange.
final class RetryStage: ExchangeStage, Sendable {
    private let retrier: RequestRetrier

    init(retrier: RequestRetrier) {
        self.retrier = retrier
    }

    func attemptResponse(_ response: ResponseHead, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan? {
        guard retrier.mayRetry(status: response.status, host: attempt.host) else { return nil }
        return plan(for: .response(status: response.status, retryAfter: response.headerFields[.retryAfter]),
                    attempt: attempt, exchange: exchange)
    }

    func attemptFailed(_ error: ProxyError, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan? {
        plan(for: .failure(error), attempt: attempt, exchange: exchange)
    }

    private func plan(for outcome: AttemptOutcome, attempt: AttemptFacts, exchange: StageContext) -> ResponsePlan? {
        guard let context = attempt.retryContext(outcome: outcome),
              case .retry(let delay, let reason, let counts) = retrier.decision(for: context) else { return nil }
        exchange.emit(RequestIsRetrying(attempt: attempt.number + 1, delay: delay, reason: reason))
        return .retry(delay: delay, countsAgainstRule: counts)
    }
}
