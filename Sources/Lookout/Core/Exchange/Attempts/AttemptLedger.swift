import LookoutModel
import LookoutUpstream

/// What an exchange's attempts so far leave to the next one: where the first hop goes and whose
/// credentials it carries, the retries and redirects counted against their rules, the plan for a
/// response held back, a resumable response, and every finished attempt's transaction.
struct AttemptLedger {
    /// What the current (or next) attempt sends.
    var request: UpstreamRequest
    /// The first hop's origin-form target.
    var upstreamPath: String
    /// The host the client addressed (or a map remote rule sent it to): only it gets the client's credentials.
    var firstHost: String
    /// A map remote rule's `preserve_host` (or an edit's Host): the Host field of the first hop.
    var hostOverride: String?
    /// Retries a retry rule asked for (its `limit` counts these).
    var retriesByRule = 0
    /// URLs requested before the current one (loop detection).
    var visitedURLs: Set<String> = []
    /// One per finished attempt, in order — kept only once there is a second (the one attempt most
    /// exchanges make is `summary.upstream`, with no array to allocate).
    var transactions: [TransactionMetrics] = []
    /// Attempts whose transaction `keep` kept.
    var recorded = 0
    /// Set when the current response is held back: what to do once its task has ended.
    var pendingPlan: ResponsePlan?
    /// The relayed GET response a broken body may be resumed for (`retry.rules[i].resume`).
    var resume: ResumeState?
    /// A retry's backoff is running.
    var waitingForNext = false

    init(request: UpstreamRequest, upstreamPath: String) {
        self.request = request
        self.upstreamPath = upstreamPath
        firstHost = request.origin.host
    }

    /// Keeps a finished attempt's transaction in `upstream` (the summary's). The first is only
    /// stored; binding `upstream` to test for it would copy all of its bytes on every exchange.
    mutating func keep(_ metrics: consuming TransactionMetrics, in upstream: inout TransactionMetrics?) {
        recorded += 1
        if recorded > 1 {
            if transactions.isEmpty, let previous = upstream { transactions.append(previous) }
            transactions.append(copy metrics)  // a further attempt: kept in both
        }
        upstream = consume metrics
    }
}
