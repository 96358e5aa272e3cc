import Logging
import Lookout
import LookoutAdmin
import LookoutModel

extension Session {
    /// A session whose exchanges run the stages `StagePlan` lists, as configured. `redirectHandler`,
    /// `cachedResponseHandler` and `retrier` replace the configured policies; `adapters` are the
    /// embedder's own `RequestAdapter`s, run as a stage of every exchange.
    public convenience init(configuration: SessionConfiguration, monitors: [EventMonitor],
                            adminEndpoints: [any AdminEndpoint] = [],
                            redirectHandler: RedirectHandler? = nil,
                            cachedResponseHandler: CachedResponseHandler? = nil,
                            retrier: RequestRetrier? = nil,
                            adapters: [any RequestAdapter] = [],
                            logger: Logger = Logger(label: "lookout")) throws {
        try self.init(configuration: configuration, monitors: monitors, adminEndpoints: adminEndpoints,
                      redirectHandler: redirectHandler, cachedResponseHandler: cachedResponseHandler, retrier: retrier,
                      adapters: adapters, logger: logger, planner: { StagePlan(parts: $0) })
    }
}
