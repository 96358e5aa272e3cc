import Foundation
import Testing
@testable import LookoutConfig

@Suite("Files")
struct FileTests {
    @Test("a missing file gives one error with line 0")
    func missingFile() {
        let path = "/nonexistent-\(UUID().uuidString)/lookout.yaml"
        do {
            _ = try ConfigurationLoader.load(contentsOf: path)
            Issue.record("loaded")
        } catch {
            #expect(error.errors == [ConfigurationError(
                file: path, line: 0, column: 0, keyPath: "",
                message: "cannot read the configuration file: no such file")])
            #expect(error.description == "\(path): cannot read the configuration file: no such file")
        }
    }

    @Test("a directory is not a configuration file")
    func directory() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            _ = try ConfigurationLoader.load(contentsOf: directory.path)
            Issue.record("loaded")
        } catch {
            #expect(error.errors.map(render) == ["0:0 : cannot read the configuration file: it is a directory"])
        }
    }

    @Test("a file that is not UTF-8")
    func notUTF8() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("latin1.yaml")
        try Data([0x6C, 0x6F, 0x67, 0x3A, 0x20, 0xE9, 0x0A]).write(to: file)
        do {
            _ = try ConfigurationLoader.load(contentsOf: file.path)
            Issue.record("loaded")
        } catch {
            #expect(error.errors.map(render) == ["0:0 : the configuration file is not valid UTF-8 text"])
        }
    }

    @Test("errors from a file name the file as it was given")
    func errorsNameTheFile() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("bad.yaml")
        try "headers:\n  via: maybe\n".write(to: file, atomically: true, encoding: .utf8)
        do {
            _ = try ConfigurationLoader.load(contentsOf: file.path)
            Issue.record("loaded")
        } catch {
            #expect(error.description == "\(file.path):2:8: headers.via: expected true or false, got \"maybe\"")
        }
    }

    @Test("an empty file gives the defaults")
    func emptyFile() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("empty.yaml")
        try Data().write(to: file)
        #expect(try ConfigurationLoader.load(contentsOf: file.path, environment: testEnvironment) == defaults)
    }
}

@Suite("defaultConfigurationPath")
struct DefaultPathTests {
    func find(
        environment: [String: String] = [:],
        currentDirectory: String = "/work/cwd",
        executables: [String] = [],
        existing: Set<String>
    ) -> String? {
        ConfigurationLoader.defaultConfigurationPath(
            environment: environment, currentDirectory: currentDirectory,
            executablePaths: executables, fileExists: { existing.contains($0) })
    }

    @Test("$LOOKOUT_CONFIG wins, even when that file does not exist")
    func environmentWins() {
        #expect(find(environment: ["LOOKOUT_CONFIG": "/tmp/mine.yaml"],
                     existing: ["/work/cwd/config/lookout.yaml"]) == "/tmp/mine.yaml")
        #expect(find(environment: ["LOOKOUT_CONFIG": ""],
                     existing: ["/work/cwd/config/lookout.yaml"]) == "/work/cwd/config/lookout.yaml")
    }

    @Test("./config/lookout.yaml comes next")
    func currentDirectory() {
        #expect(find(executables: ["/repo/.build/debug/lookout"],
                     existing: ["/work/cwd/config/lookout.yaml", "/repo/config/lookout.yaml"])
            == "/work/cwd/config/lookout.yaml")
    }

    @Test("then <executable dir>/../../config/lookout.yaml")
    func besideTheExecutable() {
        #expect(find(executables: ["/repo/.build/debug/lookout"],
                     existing: ["/repo/config/lookout.yaml", "/etc/lookout/lookout.yaml"])
            == "/repo/config/lookout.yaml")
        // a relative argv[0] is taken from the current directory
        #expect(find(currentDirectory: "/repo", executables: [".build/release/lookout"],
                     existing: ["/repo/config/lookout.yaml"])
            == "/repo/config/lookout.yaml")
        // the symlink-resolved .build/<triple>/debug path finds the checkout too
        #expect(find(executables: ["/repo/.build/x86_64-unknown-linux-gnu/debug/lookout"],
                     existing: ["/repo/config/lookout.yaml"])
            == "/repo/config/lookout.yaml")
    }

    @Test("then /etc/lookout/lookout.yaml, else nil")
    func etcThenNil() {
        #expect(find(executables: ["/usr/local/bin/lookout"], existing: ["/etc/lookout/lookout.yaml"])
            == "/etc/lookout/lookout.yaml")
        #expect(find(executables: ["/usr/local/bin/lookout"], existing: []) == nil)
    }

    @Test("the real lookup returns an existing file or nil")
    func realLookup() {
        if let path = ConfigurationLoader.defaultConfigurationPath(),
           ProcessInfo.processInfo.environment["LOOKOUT_CONFIG"] == nil {
            #expect(FileManager.default.fileExists(atPath: path))
        }
    }
}

@Suite("ListenAddress")
struct ListenAddressTests {
    @Test("parses the forms --listen takes", arguments: [
        ("127.0.0.1:8080", "127.0.0.1", 8080),
        ("localhost:0", "127.0.0.1", 0),
        ("[::1]:8080", "::1", 8080),
        ("[::ffff:127.0.0.1]:1", "::ffff:127.0.0.1", 1),
        ("0.0.0.0:65535", "0.0.0.0", 65535),
    ])
    func parses(text: String, host: String, port: Int) throws {
        let address = try ListenAddress(parsing: text)
        #expect(address == ListenAddress(host: host, port: port))
    }

    @Test("IPv6 is written back in brackets")
    func description() {
        #expect(ListenAddress(host: "::1", port: 1).description == "[::1]:1")
        #expect(ListenAddress(host: "::1", port: 1).isIPv6)
        #expect(ListenAddress(host: "127.0.0.1", port: 2).description == "127.0.0.1:2")
        #expect(!ListenAddress(host: "127.0.0.1", port: 2).isIPv6)
    }

    @Test("refuses what it cannot listen on")
    func refuses() {
        #expect(throws: ListenAddress.ParseError(message: "host \"example.com\" must be an IPv4 or IPv6 address or \"localhost\"")) {
            try ListenAddress(parsing: "example.com:80")
        }
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress(parsing: "") }
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress(parsing: "1.2.3:80") }
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress(parsing: "[fe80::1%eth0]:80") }
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress(parsing: "127.0.0.1:-1") }
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress(parsing: "127.0.0.1:８０") }
    }
}
