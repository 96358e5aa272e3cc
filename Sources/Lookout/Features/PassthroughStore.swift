import Foundation
import LookoutModel
import LookoutSync

/// `interception.learn_passthrough`: the (client JA4, host) pairs whose client refused Lookout's
/// certificate — it pins, or trusts only its own roots — and which are tunnelled blindly from then
/// on. Kept in `state_dir/passthrough.json` across restarts; the file is read again when it
/// changes (`lookout passthrough forget|clear` edit it while the proxy runs).
public final class PassthroughStore: Sendable {
    public struct Entry: Codable, Sendable, Hashable {
        public var host: String
        public var ja4: String
        public var alert: String
        public var learnedAt: String

        enum CodingKeys: String, CodingKey {
            case host, ja4, alert
            case learnedAt = "learned_at"
        }
    }

    public let path: String
    private struct State {
        var entries: [Entry] = []
        var modified: Date?
    }
    private let state = Guarded(State())

    public init(path: String) {
        self.path = path
        state.withLock { Self.reload(&$0, path: path) }
    }

    /// The entries, as the file has them now.
    public var entries: [Entry] { state.withLock { Self.reload(&$0, path: path); return $0.entries } }

    /// Whether some client of `host` is tunnelled blindly (so its ClientHello is worth waiting for).
    func hasHost(_ host: String) -> Bool {
        state.withLock { state in
            Self.reload(&state, path: path)
            return state.entries.contains { $0.host == host }
        }
    }

    func contains(ja4: String, host: String) -> Bool {
        state.withLock { $0.entries.contains { $0.host == host && $0.ja4 == ja4 } }
    }

    /// Learns a pair; false when it was known.
    @discardableResult
    func learn(ja4: String, host: String, alert: String) -> Bool {
        state.withLock { state in
            Self.reload(&state, path: path)
            guard !state.entries.contains(where: { $0.host == host && $0.ja4 == ja4 }) else { return false }
            state.entries.append(Entry(host: host, ja4: ja4, alert: alert, learnedAt: ISO8601DateFormatter().string(from: Date())))
            Self.save(state.entries, to: path)
            state.modified = Self.modified(path)
            return true
        }
    }

    /// Forgets `host` (every client of it), or everything; how many entries went.
    @discardableResult
    public func forget(host: String?) -> Int {
        state.withLock { state in
            Self.reload(&state, path: path)
            let before = state.entries.count
            state.entries.removeAll { host == nil || $0.host == host }
            Self.save(state.entries, to: path)
            state.modified = Self.modified(path)
            return before - state.entries.count
        }
    }

    private static func reload(_ state: inout State, path: String) {
        let modified = Self.modified(path)
        guard modified != state.modified else { return }
        state.modified = modified
        guard let data = FileManager.default.contents(atPath: path),
              let entries = try? JSONDecoder().decode([Entry].self, from: data) else {
            state.entries = []
            return
        }
        state.entries = entries
    }

    private static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    private static func save(_ entries: [Entry], to path: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(entries) else { return }
        FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600])
    }
}
