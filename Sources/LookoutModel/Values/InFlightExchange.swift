/// One exchange or tunnel still running, as an operator sees it (`GET /exchanges?state=in_flight`),
/// like the task registry AFNetworking keeps of its running tasks.
public struct InFlightExchange: Sendable {
    /// What the summary record would say if the exchange ended now: `end` is when the snapshot
    /// was taken, `upstream` the running attempt so far (unfinished phases are nil).
    public var summary: ExchangeSummary
    /// Where it is: `starting`, `collapsed`, `retry_wait`, `queued`, `dns`, `connect`, `tls`,
    /// `send`, `wait`, `receive`, `stored_body`, `relaying`.
    public var phase: String

    public init(summary: ExchangeSummary, phase: String) {
        self.summary = summary
        self.phase = phase
    }
}

extension TransactionMetrics {
    /// The phase an attempt is in, from the timestamps it has so far (RFC 9110 has no names for
    /// these; they are HAR's timing phases).
    public var currentPhase: String {
        if responseStart != nil { return "receive" }
        if requestEnd != nil { return "wait" }
        if requestStart != nil { return "send" }
        if secureConnectionStart != nil { return "tls" }
        if connectStart != nil { return "connect" }
        if domainLookupStart != nil { return "dns" }
        return "queued"
    }
}

