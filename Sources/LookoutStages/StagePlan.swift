import Lookout
import LookoutTLS
import LookoutModel
import LookoutUpstream

/// The order of the stages, written once. An exchange asks for its list when it starts: the
/// shared stages every exchange runs (built once per session, so an exchange that no per-host
/// rule touches allocates nothing for them), with the per-host stages its rules call for put
/// in their places.
///
/// Adding a capability: a stage file in this folder and one line in `stages(for:)`.
///
/// 0. trace        — the exchange's W3C trace context, continued from the client's (`otel`)
/// 1. map remote   — the request goes to another origin (every later step sees the mapped one)
/// 2. capture      — bodies written to files as they pass (as the client and the origin sent them)
/// 3. breakpoints  — an operator pauses, edits, answers or aborts the exchange (`breakpoints`)
/// 4. hooks        — external programs see, change, answer or abort it, in config order (`hooks`)
/// 5. shaping      — latency (a hold), injected status, pacing and cuts
/// 6. map local    — an answer from a file
///    simulate     — an answer from a recording (`simulate`)
/// 7. redirects    — a 3xx passed, rewritten, refused or followed
/// 8. retries      — a listed status or failure tried again
/// 9. cache        — a stored answer, a collapsed miss, validation, storing (`cache.enabled`)
/// 10. Via         — Lookout names itself on requests and responses
/// 11. adapters    — the embedder's `RequestAdapter`s
/// 12. Forwarded   — whom Lookout forwards for
/// 13. header rules — the host's edits of requests and responses
/// 14. audit       — passive security findings about the response and its TLS (`audit`)
/// 15. messages    — event streams and gRPC messages read as they pass (`messages`)
///
/// After the request head's stages come the upstream attempts.
final class StagePlan: StagePlanning {
    private let mapRules: MapRules
    private let capture: CaptureSettings?
    private let captureStore: BodyCaptureStore?
    private let shapingRules: HostRuleSet<ShapingRule>
    private let cache: SharedCache?
    /// The per-host cache rules of this plan's configuration.
    private let cacheHandler: CachedResponseHandler?
    private let breakpoints: Breakpoints
    private let hooks: Hooks
    private let simulation: Simulation?
    /// `otel`: every exchange's trace context, made first (stage 0).
    private let tracing: TraceStage?
    /// `otel.propagate`: each attempt carries a `traceparent` naming its span.
    let propagatesTrace: Bool
    /// `messages.enabled`: the settings WebSocket tunnels read their messages with.
    let messageSettings: MessagesSettings?
    /// Stages 7 and 8.
    private let attempts: [any ExchangeStage]
    /// Stages 10–13, as configured.
    private let messages: [any ExchangeStage]
    /// 7–13 without the cache: what an exchange no per-host rule touches runs, with nothing to allocate.
    private let shared: [any ExchangeStage]

    convenience init(parts: StagePlanParts) {
        self.init(configuration: parts.configuration, captureStore: parts.captureStore, cache: parts.cache,
                  cacheHandler: parts.cacheHandler, breakpoints: parts.breakpoints, hooks: parts.hooks, simulation: parts.simulation, adapters: parts.adapters,
                  redirectHandler: parts.redirectHandler, retrier: parts.retrier)
    }

    init(configuration: SessionConfiguration, captureStore: BodyCaptureStore?, cache: SharedCache?,
         cacheHandler: CachedResponseHandler? = nil, breakpoints: Breakpoints,
         hooks: Hooks, simulation: Simulation?, adapters: [any RequestAdapter], redirectHandler: RedirectHandler, retrier: RequestRetrier) {
        self.cache = cache
        self.cacheHandler = cacheHandler
        self.breakpoints = breakpoints
        self.hooks = hooks
        self.simulation = simulation
        mapRules = configuration.mapRules
        capture = configuration.capture
        self.captureStore = captureStore
        shapingRules = configuration.shapingRules
        attempts = [RedirectStage(handler: redirectHandler), RetryStage(retrier: retrier)]
        var messages: [any ExchangeStage] = []
        if configuration.addVia { messages.append(ViaStage()) }
        if !adapters.isEmpty { messages.append(RequestAdapterStage(adapters: adapters)) }
        if configuration.addForwarded { messages.append(ForwardedStage()) }
        if !configuration.headerRules.isEmpty { messages.append(HeaderRulesStage(rules: configuration.headerRules)) }
        if let audit = configuration.audit {
            messages.append(AuditStage(disabled: audit.disabled, rules: audit.rules, certificateExpiryDays: audit.certificateExpiryDays))
        }
        messageSettings = configuration.messages.enabled ? configuration.messages : nil
        if let messageSettings {
            messages.append(MessagesStage(settings: messageSettings, captureStore: captureStore, capture: configuration.capture))
        }
        self.messages = messages
        let otel = configuration.otel
        tracing = otel.isEnabled && (otel.traces || otel.propagate)
            ? TraceStage(propagate: otel.propagate, sampleRatio: otel.sampleRatio) : nil
        propagatesTrace = otel.isEnabled && otel.propagate
        self.shared = (tracing.map { [$0] } ?? []) + attempts + messages
    }

    /// Where the messages of an exchange to `clientKey` are captured, when a capture rule covers it.
    func messageCapture(for clientKey: HostRuleKey) -> MessageCapture? {
        MessageCapture.matching(clientKey, store: captureStore, settings: capture)
    }

    /// The stages of one exchange. `clientKey` is the host the client addressed: capture and
    /// shaping follow it (the connection's rules — trust, retries, parent — follow the origin
    /// actually contacted). A background revalidation runs only the shared stages and the cache.
    /// `recordsWanted`: a monitor wants the cache's lifecycle records.
    func stages(for route: StageRoute, clientKey: HostRuleKey, requestID: UInt64, background: Bool,
                recordsWanted: Bool) -> [any ExchangeStage] {
        let cacheStage = cache.map { CacheStage(shared: $0, handler: cacheHandler, validatesAlways: background, recordsWanted: recordsWanted) }
        guard !background else { return cacheStage.map { attempts + [$0] + messages } ?? attempts + messages }
        var map: MapRules.Match?
        if !mapRules.isEmpty {
            map = mapRules.match(isSecure: route.origin.isSecure, host: route.origin.host, port: route.origin.port,
                                 path: route.path)
        }
        let captureRule = captureStore != nil ? capture?.rules.match(for: clientKey)?.rule : nil
        let shapingRule = shapingRules.match(for: clientKey)?.rule
        let pauses = breakpoints.hasRules
        guard map != nil || captureRule != nil || shapingRule != nil || cacheStage != nil || pauses || !hooks.isEmpty
                || simulation != nil else {
            return shared
        }
        var stages: [any ExchangeStage] = []
        stages.reserveCapacity(shared.count + 5)
        if let tracing { stages.append(tracing) }
        if case .remote(let rule) = map { stages.append(MapRemoteStage(rule: rule)) }
        if let captureStore, let captureRule {
            stages.append(CaptureStage(store: captureStore, rule: captureRule, requestID: requestID))
        }
        if pauses { stages.append(BreakpointStage(hub: breakpoints)) }
        if !hooks.isEmpty { stages.append(HookStage(hooks: hooks)) }
        if let shapingRule { stages.append(ShapingStage(rule: shapingRule)) }
        if case .local(let rule) = map { stages.append(MapLocalStage(rule: rule)) }
        if let simulation { stages.append(SimulateStage(simulation: simulation)) }
        stages.append(contentsOf: attempts)
        if let cacheStage { stages.append(cacheStage) }
        stages.append(contentsOf: messages)
        return stages
    }
}
