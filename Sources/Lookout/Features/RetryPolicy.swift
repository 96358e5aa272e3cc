import HTTPTypes
import LookoutHTTP
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// What one host's retry rule allows (config `retry.rules`).
public struct RetryRule: Sendable {
    /// Extra attempts after the first; 0 = only the stale pooled-connection retry.
    public var limit = 0
    /// Methods retried; the idempotent ones by default (RFC 9110 §9.2.2).
    public var methods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]
    /// Response statuses held back and retried.
    public var statuses: Set<Int> = [502, 503, 504]
    /// `ProxyError.code`s retried.
    public var errors: Set<String> = ["upstream_connect_failed", "upstream_connect_timeout", "upstream_closed"]
    /// Delay before retry n (1-based): min(max, base × multiplier^(n−1)) seconds, or a random point
    /// in its upper half with `jitter`.
    public var backoffBase = 0.2
    public var backoffMultiplier = 2.0
    public var backoffMax = 5.0
    public var jitter = true
    /// Wait as long as a retried response's `Retry-After` says, up to `maxRetryAfter` seconds.
    public var honorRetryAfter = true
    public var maxRetryAfter = 30.0
    /// Request bodies up to this size are kept so they can be sent again.
    public var replayBodyBytes: UInt64 = 10_485_760
    /// How many times one GET response that broke off mid-body is resumed (`resume`,
    /// `max_resumes`); 0 = never.
    public var maxResumes = 0

    public init() {}
}

/// What ended an upstream attempt, as the retrier sees it.
public enum AttemptOutcome: Sendable {
    /// A final response head arrived; nothing of it has reached the client yet.
    case response(status: Int, retryAfter: String?)
    case failure(ProxyError)
}

/// What the exchange knows when asking whether to try again.
public struct RetryContext: Sendable {
    public var method: HTTPRequest.Method
    public var host: String
    /// The attempt that just ended (1 for the first).
    public var attempt: Int
    /// Retries already made under the host's rule (the stale-connection retry does not count).
    public var retriesByRule: Int
    public var outcome: AttemptOutcome
    /// The attempt used a pooled connection that had served earlier requests.
    public var usedReusedConnection: Bool
    /// Some bytes of the response had arrived from the origin.
    public var receivedResponseBytes: Bool
    /// The request body (if any) can be sent again.
    public var bodyIsReplayable: Bool
    /// Wall-clock now in Unix seconds, for `Retry-After` dates.
    public var now: Double
}

/// Whether to make another upstream attempt.
public enum RetryDecision: Sendable, Equatable {
    /// Start the next attempt after `delay` seconds; `reason` is the status or error code retried.
    case retry(delay: Double, reason: String, countsAgainstRule: Bool)
    case doNotRetry
}

/// Decides retries, like Alamofire's `RequestRetrier`.
public protocol RequestRetrier: Sendable {
    func decision(for context: RetryContext) -> RetryDecision
    /// How large a request body to `host` may be kept for sending again.
    func replayLimit(forHost host: String) -> UInt64
    /// Whether requests to `host` may be retried, so their bodies are worth keeping.
    func keepsBodies(forHost host: String) -> Bool
    /// Whether a response with `status` from `host` could be retried at all; false lets the
    /// exchange skip building a `RetryContext` for every response.
    func mayRetry(status: Int, host: String) -> Bool
    /// How many times a response from `host` that broke off mid-body may be resumed.
    func resumeLimit(forHost host: String) -> Int
    /// Whether any host's responses may be resumed.
    var resumesResponses: Bool { get }
}

extension RequestRetrier {
    /// Embedders' retriers resume nothing unless they say so.
    public func resumeLimit(forHost host: String) -> Int { 0 }
    /// Whether any host's responses may be resumed; false spares every response the question.
    public var resumesResponses: Bool { false }
}

/// Retries by per-host rules, plus the automatic retries allowed with no rule: an idempotent request
/// whose pooled connection the origin had closed before answering (RFC 9112 §9.3.1), and any
/// request an HTTP/2 origin refused unprocessed (RFC 9113 §8.7).
public struct RetryPolicy: RequestRetrier {
    public let rules: HostRuleSet<RetryRule>
    private let random: @Sendable () -> Double

    public init(rules: HostRuleSet<RetryRule>, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.rules = rules
        self.random = random
    }

    public static let staleConnectionsOnly = RetryPolicy(rules: .empty)

    static let idempotentMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace, .put, .delete]

    public func replayLimit(forHost host: String) -> UInt64 {
        rules.rule(for: host)?.replayBodyBytes ?? RetryRule().replayBodyBytes
    }

    public func mayRetry(status: Int, host: String) -> Bool {
        guard !rules.isEmpty, let rule = rules.rule(for: host) else { return false }
        return rule.limit > 0 && rule.statuses.contains(status)
    }

    public var resumesResponses: Bool { rules.contains { $0.maxResumes > 0 } }

    public func resumeLimit(forHost host: String) -> Int {
        rules.isEmpty ? 0 : rules.rule(for: host)?.maxResumes ?? 0
    }

    public func keepsBodies(forHost host: String) -> Bool {
        (rules.rule(for: host)?.limit ?? 0) > 0
    }

    public func decision(for context: RetryContext) -> RetryDecision {
        guard context.bodyIsReplayable else { return .doNotRetry }
        if case .failure(.upstreamFailed(.closed)) = context.outcome, context.attempt == 1, context.usedReusedConnection,
           !context.receivedResponseBytes, Self.idempotentMethods.contains(context.method) {
            return .retry(delay: 0, reason: "stale_pooled_connection", countsAgainstRule: false)
        }
        if case .failure(.upstreamFailed(.streamRefused)) = context.outcome, context.attempt == 1 {
            // RFC 9113 §8.7: the origin says it did not process the request, so any method may go again.
            return .retry(delay: 0, reason: "refused_stream", countsAgainstRule: false)
        }
        guard let rule = rules.rule(for: context.host), context.retriesByRule < rule.limit,
              rule.methods.contains(context.method.rawValue) else { return .doNotRetry }
        let retry = context.retriesByRule + 1
        switch context.outcome {
        case .response(let status, let retryAfter):
            guard rule.statuses.contains(status) else { return .doNotRetry }
            if rule.honorRetryAfter, let retryAfter, let wait = Self.seconds(retryAfter: retryAfter, now: context.now) {
                return .retry(delay: min(wait, rule.maxRetryAfter), reason: String(status), countsAgainstRule: true)
            }
            return .retry(delay: backoff(rule, retry: retry), reason: String(status), countsAgainstRule: true)
        case .failure(let error):
            guard rule.errors.contains(error.code) else { return .doNotRetry }
            return .retry(delay: backoff(rule, retry: retry), reason: error.code, countsAgainstRule: true)
        }
    }

    private func backoff(_ rule: RetryRule, retry: Int) -> Double {
        var delay = rule.backoffBase
        for _ in 1..<max(retry, 1) { delay *= rule.backoffMultiplier }
        delay = min(delay, rule.backoffMax)
        return rule.jitter ? delay * (0.5 + 0.5 * random()) : delay
    }

    /// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP-date; nil when it is neither.
    static func seconds(retryAfter value: String, now: Double) -> Double? {
        let text = value.trimmingASCIIWhitespace()
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return Double(text.prefix(10)) ?? nil
        }
        guard let date = HTTPDate.unixSeconds(text) else { return nil }
        return max(0, date - now)
    }
}
