import LookoutIO
import LookoutModel
import LookoutTLS
import LookoutUpstream

/// What a stage may know of its exchange at the point it is asked (`StageContext.facts`): who
/// asked, where the request goes now, and the current attempt. A value: read it where it is
/// needed, since a map rule or a followed redirect changes the route.
package struct ExchangeFacts {
    package let requestID: UInt64
    let connectionID: UInt64
    /// Where the client connected from.
    package let clientAddress: String
    /// The host the client addressed, prepared for the per-host rule sets.
    package let clientKey: HostRuleKey
    let kind: ExchangeSummary.Kind
    /// The client's HTTP version, as the record names it.
    let httpVersion: String
    /// When the exchange began (records of it count their milliseconds from here).
    package let startedAt: Instant
    /// The exchange's loop: stages that wait schedule their timers on it.
    package let loop: EventLoop
    /// The URL the exchange's record names (the client's, or where a map rule sent it).
    package let url: String
    /// Where the request goes now (a map rule or a followed redirect changes it).
    package let route: StageRoute
    /// The request's first hop, before any redirect was followed.
    package let isFirstHop: Bool
    /// The request asks for a protocol switch that goes upstream (`Upgrade`, RFC 9110 §7.8).
    package let asksForUpgrade: Bool
    /// A stage changed the exchange (its record names who: `modified_by`).
    let modified: Bool
    /// When the current attempt finished sending the request, if it has.
    package let requestSentAt: Instant?
    /// The current attempt's upstream TLS, if it spoke TLS.
    package let upstreamTLS: UpstreamTLSDetails?
}
