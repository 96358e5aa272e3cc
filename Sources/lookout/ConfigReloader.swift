import Dispatch
import Foundation
import Logging
import Lookout
import LookoutConfig
import LookoutTLS
import LookoutUpstream
import Yams

/// Reads the config file again (SIGHUP, `POST /admin/reload`, `config_watch`) and applies what may
/// change while connections run — `auth` and `policy` — to the session. A file with any error is
/// refused whole and the running configuration stays; sections that changed but cannot change
/// live (`listen`, and the rest) are reported as waiting for a restart. One reload at a time.
final class ConfigReloader: @unchecked Sendable {  // state confined to `queue`
    /// What changes without a restart.
    static let liveSections: Set<String> = ["auth", "policy", "config_watch"]

    private let path: String
    private let session: Session
    private let logger: Logger
    private let queue = DispatchQueue(label: "lookout.reload")
    /// The running configuration's top-level sections as written, to compare a new file with.
    private var running: [String: Node]
    private var watcher: DispatchSourceTimer?
    private var lastSeen: (modified: Int, size: Int, inode: UInt64)?

    init(path: String, session: Session, logger: Logger, watch: Bool) {
        self.path = path
        self.session = session
        self.logger = logger
        running = (try? Self.sections(String(contentsOfFile: path, encoding: .utf8))) ?? [:]
        lastSeen = Self.stamp(path)
        if watch { queue.async { self.startWatching() } }
    }

    /// Reloads now (on the reload queue, waiting for it).
    func reload(trigger: String) -> Session.ReloadOutcome {
        queue.sync { reloadOnQueue(trigger: trigger) }
    }

    private func reloadOnQueue(trigger: String) -> Session.ReloadOutcome {
        lastSeen = Self.stamp(path)
        let outcome = apply()
        session.recordReload(outcome, trigger: trigger)
        if let error = outcome.error {
            logger.error("config reload (\(trigger)) refused, the running configuration stays: \(error)")
        } else {
            logger.info("config reload (\(trigger)): changed [\(outcome.changed.joined(separator: ", "))], restart needed for [\(outcome.restartNeeded.joined(separator: ", "))]")
        }
        return outcome
    }

    private func apply() -> Session.ReloadOutcome {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            return Session.ReloadOutcome(error: "\(path): cannot be read")
        }
        let file: LookoutConfiguration
        let sections: [String: Node]
        do {
            file = try ConfigurationLoader.load(contentsOf: path)
            sections = try Self.sections(String(decoding: bytes, as: UTF8.self))
        } catch let errors as ConfigurationErrors {
            return Session.ReloadOutcome(error: errors.description)
        } catch {
            return Session.ReloadOutcome(error: "\(path): \(error)")
        }
        if let problem = file.openProxyProblem ?? file.adminTokenProblem {
            return Session.ReloadOutcome(error: "\(path): \(problem)")
        }
        let names = Set(sections.keys).union(running.keys)
        let changed = names.filter { sections[$0] != running[$0] }.sorted()
        let live = changed.filter { Self.liveSections.contains($0) }
        if live.contains("auth") || live.contains("policy") {
            session.replaceClientRules(proxyCredentials: file.auth.users,
                                       credentialsRequired: file.auth.required ?? !file.policy.isConfigured,
                                       policy: file.policy.isConfigured ? EgressPolicy(file.policy) : nil)
        }
        if live.contains("config_watch") {
            if file.configWatch { startWatching() } else { stopWatching() }
        }
        for name in live { running[name] = sections[name] }
        let hash = SHA256.digest(Array(bytes)).map { String(format: "%02x", $0) }.joined()
        return Session.ReloadOutcome(changed: changed, reloaded: live,
                                     restartNeeded: changed.filter { !Self.liveSections.contains($0) }, hash: hash)
    }

    /// `config_watch`: the file is looked at once a second; a new modification time, size or
    /// inode (an editor's rename) reloads it.
    private func startWatching() {
        guard watcher == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(100))
        timer.setEventHandler { [unowned self] in
            let now = Self.stamp(path)
            guard let now, let last = lastSeen, now != last else {
                if lastSeen == nil { lastSeen = now }
                return
            }
            _ = reloadOnQueue(trigger: "watch")
        }
        watcher = timer
        timer.activate()
    }

    private func stopWatching() {
        watcher?.cancel()
        watcher = nil
    }

    private static func stamp(_ path: String) -> (modified: Int, size: Int, inode: UInt64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec, Int(info.st_size), UInt64(info.st_ino))
    }

    /// The document's top-level sections as nodes (an empty file has none).
    private static func sections(_ text: String) throws -> [String: Node] {
        guard let root = try Yams.compose(yaml: text), case .mapping(let mapping) = root else { return [:] }
        var sections: [String: Node] = [:]
        for (key, value) in mapping {
            if case .scalar(let scalar) = key { sections[scalar.string] = value }
        }
        return sections
    }
}
