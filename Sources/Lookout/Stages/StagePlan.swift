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
/// 1. map remote   — the request goes to another origin (every later step sees the mapped one)
/// 2. capture      — bodies written to files as they pass
/// 3. shaping      — latency (a hold), injected status, pacing and cuts
/// 4. map local    — an answer from a file
/// 5. redirects    — a 3xx passed, rewritten, refused or followed
/// 6. retries      — a listed status or failure tried again
/// 7. Via          — Lookout names itself on requests and responses
/// 8. adapters     — the embedder's `RequestAdapter`s
/// 9. Forwarded    — whom Lookout forwards for
/// 10. header rules — the host's edits of requests and responses
///
/// After the request head's stages comes the shared cache (which may answer too), then the
/// upstream attempts.
struct StagePlan: Sendable {
    private let mapRules: MapRules
    private let capture: CaptureSettings?
    private let captureStore: BodyCaptureStore?
    private let shapingRules: HostRuleSet<ShapingRule>
    /// Stages 5–10, as configured.
    private let shared: [any ExchangeStage]

    init(configuration: SessionConfiguration, captureStore: BodyCaptureStore?, adapters: [any RequestAdapter],
         redirectHandler: RedirectHandler, retrier: RequestRetrier) {
        mapRules = configuration.mapRules
        capture = configuration.capture
        self.captureStore = captureStore
        shapingRules = configuration.shapingRules
        var shared: [any ExchangeStage] = [RedirectStage(handler: redirectHandler), RetryStage(retrier: retrier)]
        if configuration.addVia { shared.append(ViaStage()) }
        if !adapters.isEmpty { shared.append(RequestAdapterStage(adapters: adapters)) }
        if configuration.addForwarded { shared.append(ForwardedStage()) }
        if !configuration.headerRules.isEmpty { shared.append(HeaderRulesStage(rules: configuration.headerRules)) }
        self.shared = shared
    }

    /// The stages of one exchange. `clientKey` is the host the client addressed: capture and
    /// shaping follow it (the connection's rules — trust, retries, parent — follow the origin
    /// actually contacted). A background revalidation runs only the shared stages.
    func stages(for route: StageRoute, clientKey: HostRuleKey, requestID: UInt64,
                background: Bool) -> [any ExchangeStage] {
        guard !background else { return shared }
        var map: MapRules.Match?
        if !mapRules.isEmpty {
            map = mapRules.match(isSecure: route.origin.isSecure, host: route.origin.host, port: route.origin.port,
                                 path: route.path)
        }
        let captureRule = captureStore != nil ? capture?.rules.match(for: clientKey)?.rule : nil
        let shapingRule = shapingRules.match(for: clientKey)?.rule
        guard map != nil || captureRule != nil || shapingRule != nil else { return shared }
        var stages: [any ExchangeStage] = []
        stages.reserveCapacity(shared.count + 4)
        if case .remote(let rule) = map { stages.append(MapRemoteStage(rule: rule)) }
        if let captureStore, let captureRule {
            stages.append(CaptureStage(store: captureStore, rule: captureRule, requestID: requestID))
        }
        if let shapingRule { stages.append(ShapingStage(rule: shapingRule)) }
        if case .local(let rule) = map { stages.append(MapLocalStage(rule: rule)) }
        stages.append(contentsOf: shared)
        return stages
    }
}
