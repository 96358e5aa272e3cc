import LookoutMessages
import LookoutModel
import LookoutTLS

/// The order of an exchange's stages, as the session is given it (`LookoutStages`' `StagePlan`):
/// the core asks it for each exchange's list and never names a stage, so a stage is added
/// without touching the core (and the compiler keeps the core from depending on one).
package protocol StagePlanning: AnyObject, Sendable {
    /// The stages of one exchange. `clientKey` is the host the client addressed; a background
    /// revalidation runs only the shared stages and the cache; `recordsWanted`: a monitor wants
    /// the cache's lifecycle records.
    func stages(for route: StageRoute, clientKey: HostRuleKey, requestID: UInt64, background: Bool,
                recordsWanted: Bool) -> [any ExchangeStage]
    /// `otel.propagate`: each attempt carries a `traceparent` naming its span.
    var propagatesTrace: Bool { get }
    /// `messages.enabled`: the settings WebSocket tunnels read their messages with.
    var messageSettings: MessagesSettings? { get }
    /// Where the messages of an exchange or tunnel to `clientKey` are captured, when a capture
    /// rule covers it.
    func messageCapture(for clientKey: HostRuleKey) -> MessageCapture?
}

/// What the session made that a stage plan is built from.
package struct StagePlanParts: Sendable {
    package let configuration: SessionConfiguration
    package let captureStore: BodyCaptureStore?
    package let cache: SharedCache?
    /// The per-host cache rules (`cache.rules`, or the embedder's handler); the store's own when nil.
    package let cacheHandler: CachedResponseHandler?
    package let breakpoints: Breakpoints
    package let hooks: Hooks
    package let simulation: Simulation?
    package let adapters: [any RequestAdapter]
    package let redirectHandler: RedirectHandler
    package let retrier: RequestRetrier
}

/// Builds the session's stage plan from what the session made (`Session(planner:)`).
package typealias StagePlanner = @Sendable (StagePlanParts) -> any StagePlanning
