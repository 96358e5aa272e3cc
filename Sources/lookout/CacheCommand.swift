import ArgumentParser
import Foundation
import Lookout
import LookoutCache
import LookoutConfig
import LookoutModel

/// `lookout cache stats|list|purge|clear`: against a running Lookout through its admin endpoint,
/// or against the store directory when Lookout is not running.
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache", abstract: "Inspect and empty the shared cache.",
        subcommands: [Stats.self, List.self, Purge.self, Clear.self])

    typealias Options = RunningProxyOptions

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Objects, bytes, and the hit ratio since start.")
        @OptionGroup var options: Options

        func run() throws {
            let json = try CacheTarget(options).perform("GET", "/cache/stats") { store in
                let s = store.statistics
                return #"{"objects":\#(s.objects),"bytes":\#(s.bytes),"max_size_bytes":\#(store.limits.maxSizeBytes),"running":false}"#
            }
            guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else {
                print(json)
                return
            }
            for key in ["objects", "bytes", "max_size_bytes", "memory_objects", "memory_bytes", "hits", "stale_served",
                        "revalidated", "collapsed", "misses", "bypassed", "stored", "hit_ratio"] {
                if let value = object[key] { print("\(key): \(value)") }
            }
            if object["running"] != nil { print("hit_ratio: n/a (Lookout is not running; figures count from its start)") }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every stored response: status, bytes, URL.")
        @OptionGroup var options: Options
        @Option(name: .long, help: "Only this host's objects.")
        var host: String?

        func run() throws {
            let query = host.map { "?host=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? ""
            let json = try CacheTarget(options).perform("GET", "/cache/list" + query) { store in
                CacheListing.json(store.list(), host: host)
            }
            guard let rows = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] else {
                print(json)
                return
            }
            for row in rows {
                print("\(row["status"] ?? "?")\t\(row["bytes"] ?? "?")\t\(row["url"] ?? "?")")
            }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove every stored response for a URL (all variants).")
        @OptionGroup var options: Options
        @Argument(help: "The absolute URL, as requested (e.g. http://example.com/a?b).")
        var url: String

        func run() throws {
            let encoded = url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url
            let json = try CacheTarget(options).perform("POST", "/cache/purge?url=" + encoded) { store in
                #"{"removed":\#(store.remove(url: url))}"#
            }
            print(json.contains("\"removed\"") ? "removed \(CacheTarget.number("removed", in: json))" : json)
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove every stored response.")
        @OptionGroup var options: Options

        func run() throws {
            let json = try CacheTarget(options).perform("POST", "/cache/clear") { store in
                #"{"removed":\#(store.removeAll())}"#
            }
            print(json.contains("\"removed\"") ? "removed \(CacheTarget.number("removed", in: json))" : json)
        }
    }
}

/// The running proxy, or its store directory when it is not running.
struct CacheTarget {
    let configuration: LookoutConfiguration
    let client: AdminClient?

    init(_ options: CacheCommand.Options) throws {
        (configuration, client) = try options.resolve()
    }

    /// Asks the running proxy, or, when nothing listens, runs `offline` on the store itself.
    func perform(_ method: String, _ target: String, offline: (CacheStore) -> String) throws -> String {
        if let client {
            do {
                let (status, body) = try client.request(method, target)
                guard status == 200 else {
                    FileHandleOutput.standardError("lookout answered \(status): \(body)")
                    throw ExitCode(1)
                }
                return body.trimmingCharacters(in: .whitespacesAndNewlines)
            } catch AdminClient.Failure.notRunning {
                // Not running: the store directly.
            } catch AdminClient.Failure.failed(let message) {
                FileHandleOutput.standardError("\(message)\n")
                throw ExitCode(1)
            }
        }
        let cache = configuration.cache
        let directory = cache.path.isEmpty ? configuration.stateDirectory + "/cache" : cache.path
        let store: CacheStore
        do {
            store = try CacheStore(directory: directory, limits: CacheLimits(
                maxSizeBytes: Int64(cache.maxSizeBytes), maxObjectBytes: Int64(cache.maxObjectBytes), memoryBytes: 0))
        } catch {
            FileHandleOutput.standardError("\(error.description)\n")
            throw ExitCode(1)
        }
        return offline(store)
    }

    static func number(_ key: String, in json: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let value = object[key] else { return "?" }
        return "\(value)"
    }
}
