import Foundation
import Testing
@testable import LookoutConfig

@Suite("Defaults")
struct DefaultsTests {
    @Test("init() holds every default config/lookout.yaml documents")
    func initHoldsTheDefaults() {
        let configuration = LookoutConfiguration(homeDirectory: "/home/someone")
        #expect(configuration.listen == [ListenAddress(host: "127.0.0.1", port: 8080)])
        #expect(configuration.stateDirectory == "/home/someone/.lookout")
        #expect(configuration.eventLoops == 0)
        #expect(configuration.maxConnections == 4096)
        #expect(configuration.limits.maxRequestLineBytes == 8192)
        #expect(configuration.limits.maxHeaderBytes == 65536)
        #expect(configuration.limits.maxHeaderCount == 128)
        #expect(configuration.limits.maxRequestBodyBytes == 0)
        #expect(configuration.timeouts.clientHeader == 30)
        #expect(configuration.timeouts.clientIdle == 60)
        #expect(configuration.timeouts.upstreamConnect == 10)
        #expect(configuration.timeouts.upstreamFirstByte == 60)
        #expect(configuration.timeouts.upstreamIdle == 60)
        #expect(configuration.timeouts.shutdownGrace == 10)
        #expect(configuration.connect.allowedPorts == [443])
        #expect(configuration.pool.maxIdlePerOrigin == 64)
        #expect(configuration.pool.idleTimeout == 30)
        #expect(configuration.dns.cacheTTL == 30)
        #expect(configuration.headers.via == true)
        #expect(configuration.log.path == "-")
        #expect(configuration.log.isStandardOutput)
        #expect(configuration.log.verbose == false)
        #expect(configuration.log.enabled == true)
        #expect(configuration.log.revealSecrets == false)
        #expect(configuration.log.includeHeaders == false)
        #expect(configuration.log.queueLimit == 65536)
    }

    @Test("init() expands ~ against $HOME")
    func initExpandsAgainstHome() {
        let home = ConfigurationLoader.homeDirectory(environment: ProcessInfo.processInfo.environment)
        let configuration = LookoutConfiguration()
        if let home {
            #expect(configuration == LookoutConfiguration(homeDirectory: home))
            #expect(!configuration.stateDirectory.hasPrefix("~"))
        } else {
            #expect(configuration.stateDirectory == "~/.lookout")
        }
    }

    @Test("a home folder with a trailing slash, or /, expands cleanly")
    func homeWithTrailingSlash() {
        #expect(LookoutConfiguration(homeDirectory: "/home/x/").stateDirectory == "/home/x/.lookout")
        #expect(LookoutConfiguration(homeDirectory: "/").stateDirectory == "/.lookout")
    }

    @Test("an empty, comment-only, blank, null or bare-marker document gives the defaults", arguments: [
        "",
        "\n\n",
        "   \n",
        "# only a comment\n",
        "# one\n# two\n\n   # three, indented\n",
        "---\n",
        "--- # nothing here\n...\n",
        "~\n",
        "null\n",
        "{}\n",
    ])
    func emptyDocuments(yaml: String) throws {
        #expect(try load(yaml) == defaults)
    }

    @Test("empty or null sections keep their defaults")
    func emptySections() throws {
        let yaml = """
            limits:
            timeouts: {}
            connect: ~
            pool:
              # nothing set
            dns: null
            headers: {}
            log:
            """
        #expect(try load(yaml) == defaults)
    }

    @Test("setting a key to its default gives the defaults")
    func explicitDefaults() throws {
        #expect(try load("listen: [\"127.0.0.1:8080\"]\nheaders: {via: true}\n") == defaults)
    }

    @Test("the shipped config/lookout.yaml loads and equals LookoutConfiguration()")
    func shippedFileIsTheDefaults() throws {
        #expect(FileManager.default.fileExists(atPath: shippedConfigurationPath), "\(shippedConfigurationPath)")
        let loaded = try ConfigurationLoader.load(contentsOf: shippedConfigurationPath)
        #expect(loaded == LookoutConfiguration())
        let loadedWithTestHome = try ConfigurationLoader.load(
            contentsOf: shippedConfigurationPath, environment: testEnvironment)
        #expect(loadedWithTestHome == defaults)
    }

    @Test("the shipped config/lookout.yaml names every key, and comments each one")
    func shippedFileHasEveryKey() throws {
        let text = try String(contentsOfFile: shippedConfigurationPath, encoding: .utf8)
        guard case .success(let composed) = ConfigurationLoader.compose(text, file: shippedConfigurationPath),
              let root = composed.root, case .mapping(let top) = root
        else {
            Issue.record("the shipped file is not a mapping")
            return
        }
        var paths: [String] = []
        for (key, value) in top {
            let name = key.string ?? "?"
            paths.append(name)
            if case .mapping(let section) = value {
                paths += section.map { "\(name).\($0.key.string ?? "?")" }
            }
        }
        #expect(paths == Schema.allPaths.sorted { a, b in
            // the file's order: each section's keys right after the section
            func order(_ path: String) -> [Int] {
                let parts = path.split(separator: ".").map(String.init)
                let top = Schema.topLevel.firstIndex(of: parts[0]) ?? 99
                guard parts.count == 2 else { return [top, -1] }
                return [top, Schema.sections[parts[0]]?.firstIndex(of: parts[1]) ?? 99]
            }
            return order(a).lexicographicallyPrecedes(order(b))
        })
        // Every key has a comment line right above it (or above its section's first comment block).
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (index, line) in lines.enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#"), let colon = trimmed.firstIndex(of: ":") else {
                continue
            }
            let key = String(trimmed[..<colon])
            let previous = index > 0 ? lines[index - 1].trimmingCharacters(in: .whitespaces) : ""
            let isSectionWithCommentedKeys = line.hasSuffix(":") && !line.hasPrefix(" ")
            #expect(previous.hasPrefix("#") || isSectionWithCommentedKeys,
                    "key '\(key)' on line \(index + 1) has no comment above it")
        }
    }
}
