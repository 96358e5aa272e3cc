import HTTPTypes
import LookoutIO
import LookoutModel

/// What the exchange does with an attempt's final response head (or failure), as the stages decided.
package enum ResponsePlan {
    /// Relay it; `location` replaces the `Location` field when a redirect rule rewrote it.
    case forward(location: String?)
    /// Hold it back and request `url` next (a followed redirect with this status).
    case follow(url: String, status: Int)
    /// Hold it back and try again after `delay` seconds.
    case retry(delay: Double, countsAgainstRule: Bool)
    /// Hold it back and answer the client with this error.
    case fail(ProxyError)
    /// Hold it back and answer with this instead (a stored response a 304 validated).
    case answer(StageAnswer)
}

/// One upstream attempt, as the stages that decide about it see it: everything a redirect or retry
/// policy weighs is here, so no stage reads it back from the exchange.
package struct AttemptFacts {
    /// 1 for the first attempt.
    package let number: Int
    /// The attempt's task, which its records name.
    let taskID: UInt64
    /// The attempt used a pooled connection that had served earlier requests.
    let usedReusedConnection: Bool
    /// Some bytes of the response had arrived from the origin.
    let receivedResponseBytes: Bool
    /// What the attempt asked for: its method, URL and host.
    let method: HTTPRequest.Method
    let url: String
    package let host: String
    /// It carries a body, and that body can be sent again (kept, or none).
    let hasBody: Bool
    let bodyIsReplayable: Bool
    /// Redirects followed before it, and the URLs requested before it (loop detection).
    let redirectsFollowed: Int
    let visitedURLs: Set<String>
    /// Retries the exchange's retry rule already spent.
    let retriesByRule: Int
    /// Bytes of a response already reached the client: nothing can be tried again.
    let responseReachedClient: Bool

    /// What a redirect policy needs to know about a 3xx of this attempt.
    package func redirectContext(status: Int, location: String) -> RedirectContext {
        RedirectContext(status: status, location: location, requestURL: url, method: method,
                        redirectsFollowed: redirectsFollowed, visitedURLs: visitedURLs.union([url]),
                        hasBody: hasBody, bodyIsReplayable: bodyIsReplayable)
    }

    /// What a retry policy needs to know; nil once bytes of a response reached the client.
    package func retryContext(outcome: AttemptOutcome) -> RetryContext? {
        guard !responseReachedClient else { return nil }
        return RetryContext(method: method, host: host, attempt: number, retriesByRule: retriesByRule, outcome: outcome,
                            usedReusedConnection: usedReusedConnection, receivedResponseBytes: receivedResponseBytes,
                            bodyIsReplayable: bodyIsReplayable, now: Double(Instant.now().unixMicroseconds) / 1e6)
    }
}
