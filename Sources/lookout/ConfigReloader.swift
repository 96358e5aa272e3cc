import Dispatch
import Foundation
import Logging
import Lookout
import LookoutConfig
import LookoutTLS
import LookoutUpstream
import Yams

/// Reads the config file again (SIGHUP, `POST /admin/reload`, `config_watch`) and applies what may
/// change while connections run: every section but the listeners, the loops, the log and the
/// exporters. A file with any error is refused whole and the running configuration stays;
/// sections that changed but cannot change live are reported as waiting for a restart, and keep
/// running as they were. One reload at a time.
final class ConfigReloader: @unchecked Sendable {  // state confined to `queue`
    /// The sections that change without a restart.
    static let liveSections: Set<String> = [
        "auth", "policy", "config_watch", "headers", "tls", "interception", "trust", "redirects", "retry", "access",
        "upstream_proxies", "capture", "map", "shaping", "hooks", "simulate", "messages", "audit", "pac",
    ]
    /// Sections of which only these keys change live (the store and the held places stay).
    static let liveKeys: [String: Set<String>] = ["cache": ["rules"], "breakpoints": ["rules"]]

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
        // What runs from now on: the new sections that change live, the running ones for the rest.
        var effective = running
        var reloaded: [String] = []
        var restartNeeded: [String] = []
        for name in changed {
            if Self.liveSections.contains(name) {
                effective[name] = sections[name]
                reloaded.append(name)
            } else if let keys = Self.liveKeys[name] {
                let (merged, live, waiting) = Self.merge(running: running[name], new: sections[name], liveKeys: keys)
                effective[name] = merged
                reloaded += live.map { "\(name).\($0)" }
                restartNeeded += waiting.map { "\(name).\($0)" }
            } else {
                restartNeeded.append(name)
            }
        }
        let hash = SHA256.digest(Array(bytes)).map { String(format: "%02x", $0) }.joined()
        guard !reloaded.isEmpty else {
            return Session.ReloadOutcome(changed: changed, reloaded: [], restartNeeded: restartNeeded, hash: hash)
        }
        do {
            let effectiveFile = try Self.load(effective, path: path)
            if let problem = effectiveFile.openProxyProblem ?? effectiveFile.adminTokenProblem {
                return Session.ReloadOutcome(error: "\(path): \(problem)")
            }
            let running = reloaded.contains("trust") ? nil : session.runningConfiguration.tls.trustManager
            let configuration = try SessionConfiguration(effectiveFile, logger: logger, trustManager: running)
            try session.reload(configuration: configuration,
                               changed: Set(reloaded.map { String($0.prefix { $0 != "." }) }))
        } catch let errors as ConfigurationErrors {
            return Session.ReloadOutcome(error: errors.description)
        } catch {
            return Session.ReloadOutcome(error: "\(path): \(error)")
        }
        if reloaded.contains("config_watch") {
            if file.configWatch { startWatching() } else { stopWatching() }
        }
        running = effective
        return Session.ReloadOutcome(changed: changed, reloaded: reloaded, restartNeeded: restartNeeded, hash: hash)
    }

    /// A section of which only `liveKeys` change live: the running section with those keys as the
    /// new file has them, and the keys that changed, live and waiting for a restart.
    private static func merge(running: Node?, new: Node?, liveKeys: Set<String>)
        -> (merged: Node?, live: [String], waiting: [String]) {
        let old = mapping(running)
        let next = mapping(new)
        var merged = old
        var live: [String] = []
        var waiting: [String] = []
        for key in Set(old.keys).union(next.keys).sorted() where old[key] != next[key] {
            if liveKeys.contains(key) {
                merged[key] = next[key]
                live.append(key)
            } else {
                waiting.append(key)
            }
        }
        let pairs = merged.keys.sorted().compactMap { key in merged[key].map { (Node(key), $0) } }
        return (pairs.isEmpty && running == nil ? nil : .mapping(Node.Mapping(pairs)), live, waiting)
    }

    /// A mapping's entries by their scalar keys (none for anything else).
    private static func mapping(_ node: Node?) -> [String: Node] {
        guard case .mapping(let mapping)? = node else { return [:] }
        var keyed: [String: Node] = [:]
        for (key, value) in mapping {
            if case .scalar(let scalar) = key { keyed[scalar.string] = value }
        }
        return keyed
    }

    /// The configuration the sections make, read as the file (its folder for relative paths).
    private static func load(_ sections: [String: Node], path: String) throws -> LookoutConfiguration {
        let pairs = sections.keys.sorted().compactMap { key in sections[key].map { (Node(key), $0) } }
        let text = try Yams.serialize(node: .mapping(Node.Mapping(pairs)))
        return try ConfigurationLoader.load(yaml: text, file: path)
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
        mapping(try Yams.compose(yaml: text))
    }
}
