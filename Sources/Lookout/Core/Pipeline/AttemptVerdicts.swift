import LookoutModel

/// What the exchange does with an attempt's final response head (or failure), as the stages decided.
enum ResponsePlan {
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

/// One upstream attempt, as the stages that decide about it see it.
struct AttemptFacts {
    /// 1 for the first attempt.
    let number: Int
    /// The attempt's task, which its records name.
    let taskID: UInt64
    /// The attempt used a pooled connection that had served earlier requests.
    let usedReusedConnection: Bool
    /// Some bytes of the response had arrived from the origin.
    let receivedResponseBytes: Bool
}
