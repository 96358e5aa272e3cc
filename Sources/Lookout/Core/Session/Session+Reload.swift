import Dispatch
import LookoutAdmin
import LookoutHTTP
import LookoutModel
import LookoutSync
import LookoutUpstream

/// Live reload of what can change while connections run: the `auth` and `policy` sections.
/// Each loop gets the new rules on its own queue; an exchange or tunnel keeps the decision it
/// started with. Reading and checking the file is the embedder's (`reloader`): the core only
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

    /// Installs new `auth` credentials and `policy` on every loop.
    public func replaceClientRules(proxyCredentials: [String], credentialsRequired: Bool, policy: EgressPolicy?) {
        let rules = ClientRules(authenticator: ProxyAuthenticator(credentials: proxyCredentials),
                                credentialsRequired: credentialsRequired, policy: policy)
        for context in contexts {
            context.loop.execute { context.rules = rules }
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
