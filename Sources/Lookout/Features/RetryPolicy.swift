import HTTPTypes

/// What the pipeline knows about a failed upstream attempt when asking whether to retry.
public struct RetryContext: Sendable {
    public var method: HTTPRequest.Method
    public var attempt: Int
    public var error: ProxyError
    /// The attempt used a pooled connection that had served earlier requests.
    public var usedReusedConnection: Bool
    /// Some bytes of the response had arrived.
    public var receivedResponseBytes: Bool
    /// The request body (if any) can be sent again.
    public var bodyIsReplayable: Bool
}

/// Whether to make another upstream attempt.
public enum RetryDecision: Sendable, Equatable {
    case retry(reason: String)
    case doNotRetry
}

/// Decides retries, like Alamofire's `RequestRetrier`.
public protocol RequestRetrier: Sendable {
    func shouldRetry(_ context: RetryContext) -> RetryDecision
}

/// Retries only an idempotent request whose pooled connection turned out to be stale: the upstream
/// closed it before answering (RFC 9112 §9.3.1 allows exactly this automatic retry).
public struct StaleConnectionRetryPolicy: RequestRetrier {
    public init() {}

    static let idempotentMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace, .put, .delete]

    public func shouldRetry(_ context: RetryContext) -> RetryDecision {
        guard context.attempt == 1, context.usedReusedConnection, !context.receivedResponseBytes,
              context.bodyIsReplayable, Self.idempotentMethods.contains(context.method) else {
            return .doNotRetry
        }
        if case .upstreamFailed(.closed) = context.error {
            return .retry(reason: "stale pooled connection")
        }
        return .doNotRetry
    }
}
