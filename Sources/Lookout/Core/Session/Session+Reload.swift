import Dispatch
import LookoutAdmin
import LookoutHTTP
import LookoutModel
import LookoutSync
import LookoutUpstream

/// Live reload of what can change while connections run: everything but the listeners and the
/// loops. Each loop gets the new environment and rules on its own queue; an exchange or tunnel
/// keeps the configuration and the decision it started with. Reading and checking the file is the embedder's (`reloader`): the core only
/// applies and records.
extension Session {
    /// What a reload did, for the admin answer and the record.
    public struct ReloadOutcome: Sendable {
        public var changed: [String]
        public var reloaded: [String]
        public var restartNeeded: [String]
        public var hash: String
        /// Set when the file could not be used (the running configuration stays).
        public var error: String?

        public init(changed: [String] = [], reloaded: [String] = [], restartNeeded: [String] = [], hash: String = "",
                    error: String? = nil) {
            self.changed = changed
            self.reloaded = reloaded
            self.restartNeeded = restartNeeded
            self.hash = hash
            self.error = error
        }
    }

    /// The configuration running now (`configuration` is the one the session started with).
    public var runningConfiguration: SessionConfiguration { generation.withLock { $0.configuration } }

    /// Installs a reloaded configuration. `changed` names the top-level sections that differ from
    /// the running ones: what depends only on the others is kept (the trust manager and the pooled
    /// connections it judged, the TLS engines, hook programs, recordings, the capture store).
    /// Everything is built first, so a part that fails leaves the running configuration whole.
    /// Each loop then takes the new environment on its own queue: exchanges and tunnels that
    /// started keep the one they started with.
    public func reload(configuration: SessionConfiguration, changed: Set<String>) throws {
        let previous = generation.withLock { $0 }
        let next = try SessionGeneration(configuration: configuration, parts: parts, previous: previous, changed: changed)
        if changed.contains("breakpoints") { try breakpoints.replaceRules(with: configuration.breakpoints.rules) }
        generation.withLock { $0 = next }
        let rules = ClientRules(configuration)
        // Connections opened under other trust rules or TLS settings are not used again.
        let retiresConnections = changed.contains("trust") || changed.contains("tls")
        for context in contexts {
            context.loop.execute {
                context.clients = next.clients
                context.rules = rules
                if retiresConnections { context.pool.retireOpened() }
            }
        }
    }

    /// Records a reload (or its failure) in the log.
    public func recordReload(_ outcome: ReloadOutcome, trigger: String) {
        if let error = outcome.error {
            emit(EventContext(connectionID: 0), SessionDidFailToReloadConfig(trigger: trigger, error: error))
        } else {
            emit(EventContext(connectionID: 0), SessionDidReloadConfig(
                trigger: trigger, changed: outcome.changed, reloaded: outcome.reloaded,
                restartNeeded: outcome.restartNeeded, hash: outcome.hash))
        }
    }

    /// `POST /admin/reload`: the embedder's reloader runs off the loop (it reads and checks a
    /// file), and its outcome is the answer. The new rules are queued on every loop before the
    /// answer is, so a request sent after it meets them.
    func reloadFromAdmin() -> AdminAnswer {
        guard let reloader = reloader.withLock({ $0 }) else {
            return Self.reloadAnswer(404, "{\"error\":\"this Lookout was started without a config file to reload\"}")
        }
        return AdminAnswer(deferred: { reply in
            DispatchQueue.global().async {
                let outcome = reloader("admin")
                if let error = outcome.error {
                    reply(Self.reloadAnswer(422, "{\"error\":\(JSONText.quoted(error))}"))
                    return
                }
                func list(_ items: [String]) -> String { "[" + items.map(JSONText.quoted).joined(separator: ",") + "]" }
                reply(Self.reloadAnswer(200, "{\"changed\":\(list(outcome.changed)),\"reloaded\":\(list(outcome.reloaded)),"
                                             + "\"restart_needed\":\(list(outcome.restartNeeded)),\"hash\":\(JSONText.quoted(outcome.hash))}"))
            }
        })
    }

    private static func reloadAnswer(_ status: Int, _ json: String) -> AdminAnswer {
        AdminAnswer(status: status, contentType: "application/json", body: Array((json + "\n").utf8))
    }
}
