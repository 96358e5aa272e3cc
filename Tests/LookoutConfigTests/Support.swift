import Foundation
import Testing
@testable import LookoutConfig

/// The `$HOME` every test loads with.
let testHome = "/home/tester"
let testEnvironment = ["HOME": testHome]

/// Loads YAML text as the file "test.yaml", with `$HOME` = `testHome`.
func load(_ yaml: String) throws(ConfigurationErrors) -> LookoutConfiguration {
    try ConfigurationLoader.load(yaml: yaml, file: "test.yaml", environment: testEnvironment)
}

/// The defaults as loaded with `$HOME` = `testHome`.
var defaults: LookoutConfiguration { LookoutConfiguration(homeDirectory: testHome) }

/// The errors loading `yaml` gives, each as "LINE:COL KEYPATH: message"
/// (an empty list, and a recorded issue, when it loads).
func errors(_ yaml: String, sourceLocation: SourceLocation = #_sourceLocation) -> [String] {
    do {
        let configuration = try load(yaml)
        Issue.record("expected errors, but it loaded: \(configuration)", sourceLocation: sourceLocation)
        return []
    } catch {
        return error.errors.map(render)
    }
}

func render(_ error: ConfigurationError) -> String {
    "\(error.line):\(error.column) \(error.keyPath): \(error.message)"
}

/// The single error loading `yaml` gives, rendered as by `errors(_:)`.
func error(_ yaml: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    let all = errors(yaml, sourceLocation: sourceLocation)
    #expect(all.count == 1, "expected exactly one error, got \(all)", sourceLocation: sourceLocation)
    return all.first
}

/// The checkout's `config/lookout.yaml`: Tests/LookoutConfigTests/ -> ../../config/lookout.yaml.
let shippedConfigurationPath: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Tests/LookoutConfigTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // the package
    .appendingPathComponent("config/lookout.yaml")
    .path

/// A fresh temporary folder, removed by the caller.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("lookout-config-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
