import LookoutTLS

/// What an exchange is, fixed when it is made: the host the client addressed, the protocol switch
/// it asks for, and whether nobody waits for it.
struct ExchangeTraits {
    /// The host the client addressed, for the per-host rules of the exchange (capture, shaping).
    let clientKey: HostRuleKey
    /// The protocol switch asked for (`Upgrade` with `Connection: upgrade`) that goes upstream,
    /// e.g. "websocket"; nil when none was asked for or it is not relayed (`Exchange.relayedUpgrade`).
    let upgradeProtocol: String?
    /// A stale-while-revalidate refresh nobody waits for (`BackgroundRevalidation`): it runs only
    /// the shared stages and the cache, and is not offered for resending.
    let background: Bool
}
