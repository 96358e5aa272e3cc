// swift-tools-version:6.0
import PackageDescription

/// Release builds of the modules on the byte path: inline across module boundaries, and leave
/// memory-exclusivity checking to the compiler (the run-time checks measured ~3 % of the proxy's
/// keep-alive throughput; `swift build` in debug keeps them).
let hotPathSettings: [SwiftSetting] = [
    .unsafeFlags(["-cross-module-optimization", "-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "Lookout",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "lookout", targets: ["lookout"]),
        .library(name: "Lookout", targets: ["Lookout", "LookoutStages"]),
    ],
    dependencies: [
        // Command-line parsing for `lookout run|config|…`.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Operational logging (stderr), separate from the traffic log.
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // The YAML config file, parsed as nodes so errors can name line and column.
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        // Value types for methods, header fields and statuses shared by every layer.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.3.0"),
        // `/metrics`: swift-metrics' handler types and the Prometheus text exposition (neither pulls in NIO).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
    ],
    targets: [
        // MARK: - System libraries
        .systemLibrary(name: "CLookoutSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLookoutNGHTTP2", pkgConfig: "libnghttp2",
                       providers: [.apt(["libnghttp2-dev"])]),
        // zlib and brotli, to decode captured bodies for HAR.
        .systemLibrary(name: "CLookoutCompression", pkgConfig: "libbrotlidec",
                       providers: [.apt(["zlib1g-dev", "libbrotli-dev"])]),
        // ISA-L's igzip: gzip of whole OTLP batches, several times zlib's speed for the same size.
        .systemLibrary(name: "CLookoutIgzip", pkgConfig: "libisal",
                       providers: [.apt(["libisal-dev"])]),

        // MARK: - Layers, bottom to top
        // A lock ThreadSanitizer can see (pthread), for the few values threads share.
        .target(name: "LookoutSync", swiftSettings: hotPathSettings),
        .target(name: "LookoutHTTP",
                dependencies: [.product(name: "HTTPTypes", package: "swift-http-types")],
                swiftSettings: hotPathSettings),
        .target(name: "LookoutTLS", dependencies: ["CLookoutSSL", "LookoutSync"], swiftSettings: hotPathSettings),
        // Reading the JSON-lines log: records in place, the filter language, summaries.
        .target(name: "LookoutLogQuery", dependencies: ["CLookoutCompression", "LookoutHTTP"], swiftSettings: hotPathSettings),
        // RFC 9111: the shared cache's rules and its store on disk.
        .target(name: "LookoutCache",
                dependencies: ["LookoutHTTP", "LookoutSync", "CLookoutSocket", .product(name: "HTTPTypes", package: "swift-http-types")],
                swiftSettings: hotPathSettings),
        .target(name: "LookoutHTTP2", dependencies: ["CLookoutNGHTTP2", "LookoutHTTP",
                                                    .product(name: "HTTPTypes", package: "swift-http-types")],
                swiftSettings: hotPathSettings),
        .target(name: "CLookoutSocket"),
        .target(name: "LookoutIO", dependencies: ["CLookoutSocket", "LookoutTLS", "LookoutSync"], swiftSettings: hotPathSettings),
        // The record vocabulary: event kinds, the summary, metrics, errors, trust decisions, and
        // the monitor protocols that receive them. Everything that reads records depends on this,
        // not on the core.
        .target(name: "LookoutModel",
                dependencies: ["LookoutHTTP", "LookoutTLS", "LookoutSync", .product(name: "HTTPTypes", package: "swift-http-types")],
                swiftSettings: hotPathSettings),
        // The admin endpoint's extension points: pages served from outside the core, streamed
        // answers, and what a page may ask of the running exchanges.
        .target(name: "LookoutAdmin",
                dependencies: ["LookoutModel", "LookoutHTTP", "LookoutIO", "LookoutSync", .product(name: "HTTPTypes", package: "swift-http-types")],
                swiftSettings: hotPathSettings),
        // The upstream side: tasks, the connection pool, the opener, HTTP/2 toward origins and the
        // parent-proxy handshake. It gets what it needs as values and reports through one delegate;
        // it does not know the session.
        .target(name: "LookoutUpstream",
                dependencies: ["LookoutModel", "LookoutHTTP", "LookoutIO", "LookoutTLS", "LookoutHTTP2", "CLookoutSocket",
                               .product(name: "HTTPTypes", package: "swift-http-types")],
                swiftSettings: hotPathSettings),
        .target(name: "Lookout",
                dependencies: ["LookoutModel", "LookoutAdmin", "LookoutUpstream", "LookoutHTTP", "LookoutIO", "LookoutTLS", "LookoutHTTP2", "LookoutCache", "LookoutLogQuery", "LookoutRecordings", "LookoutMessages", "LookoutSync", "CLookoutSocket",
                               .product(name: "HTTPTypes", package: "swift-http-types"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: hotPathSettings),
        // The stages: each a file, on the core's stage protocol and handle. The core never imports
        // this target, so a dependency from the core on a stage does not compile.
        .target(name: "LookoutStages",
                dependencies: ["Lookout", "LookoutModel", "LookoutAdmin", "LookoutUpstream", "LookoutHTTP", "LookoutIO", "LookoutTLS",
                               "LookoutCache", "LookoutLogQuery", "LookoutRecordings", "LookoutMessages", "LookoutSync",
                               .product(name: "HTTPTypes", package: "swift-http-types"),
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: hotPathSettings),
        .target(name: "LookoutMonitors",
                dependencies: ["LookoutModel", "LookoutHTTP", "CLookoutSocket", .product(name: "HTTPTypes", package: "swift-http-types")],
                exclude: ["LOG.md"],
                swiftSettings: hotPathSettings),
        // Prometheus metrics: a monitor that counts every exchange, and the `/metrics` admin page.
        .target(name: "LookoutMetrics",
                dependencies: ["LookoutModel", "LookoutAdmin", "LookoutTLS", "LookoutSync",
                               .product(name: "CoreMetrics", package: "swift-metrics"),
                               .product(name: "Prometheus", package: "swift-prometheus")],
                swiftSettings: hotPathSettings),
        // The live event stream: a ring of recent records, Server-Sent Events, `/exchanges`.
        .target(name: "LookoutLive", dependencies: ["LookoutModel", "LookoutAdmin", "LookoutMonitors", "LookoutLogQuery", "LookoutHTTP", "LookoutSync",
                                                    .product(name: "HTTPTypes", package: "swift-http-types")],
                // The web UI's static files, copied beside the executable (UIEndpoint finds them).
                resources: [.copy("UI")],
                swiftSettings: hotPathSettings),
        // Recordings as fixtures: reading Lookout logs and HAR files, and comparing two of them.
        .target(name: "LookoutRecordings", dependencies: ["LookoutLogQuery", "LookoutHTTP", "LookoutModel", "LookoutSync"]),
        // Messages inside streams, read from copies as they pass: WebSocket frames (RFC 6455,
        // permessage-deflate), event streams (SSE, NDJSON, JSON text sequences) and gRPC messages.
        .target(name: "LookoutMessages", dependencies: ["LookoutModel", "LookoutHTTP", "CLookoutCompression"],
                swiftSettings: hotPathSettings),
        // OpenTelemetry: spans and OTLP log records from the records, exported on a thread of its own.
        // It reads every exchange's summary, so it is built like the byte path.
        .target(name: "LookoutOTel", dependencies: ["LookoutModel", "LookoutMonitors", "LookoutMessages",
                                                    "LookoutHTTP", "LookoutTLS", "LookoutAdmin", "CLookoutIgzip",
                                                    .product(name: "Logging", package: "swift-log")],
                swiftSettings: hotPathSettings),
        .target(name: "LookoutConfig", dependencies: ["Yams", "LookoutModel", "LookoutTLS", "LookoutIO", "LookoutLogQuery", "LookoutRecordings",
                                                      "LookoutMessages"]),
        .executableTarget(name: "lookout",
                          dependencies: ["Lookout", "LookoutStages", "LookoutModel", "LookoutAdmin", "LookoutUpstream", "LookoutMonitors", "LookoutMetrics", "LookoutLive", "LookoutConfig", "LookoutIO", "LookoutTLS", "LookoutCache", "LookoutLogQuery", "LookoutRecordings", "LookoutOTel",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser"),
                                         .product(name: "Logging", package: "swift-log"),
                                         .product(name: "CoreMetrics", package: "swift-metrics"),
                                         .product(name: "Prometheus", package: "swift-prometheus")]),

        // MARK: - Tests
        .testTarget(name: "LookoutHTTPTests", dependencies: ["LookoutHTTP"]),
        .testTarget(name: "LookoutHTTP2Tests",
                    dependencies: ["LookoutHTTP2", "LookoutHTTP", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "LookoutConfigTests", dependencies: ["LookoutConfig", "LookoutTLS"]),
        .testTarget(name: "LookoutIOTests", dependencies: ["LookoutIO", "LookoutTLS", "CLookoutSocket"]),
        .testTarget(name: "LookoutUpstreamTests",
                    dependencies: ["LookoutUpstream", "LookoutModel", "LookoutIO", "LookoutTLS", "LookoutHTTP",
                                   .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "LookoutAdminTests", dependencies: ["LookoutAdmin", "LookoutModel", "LookoutIO",
                                                              .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "LookoutModelTests", dependencies: ["LookoutModel", "LookoutHTTP", "LookoutTLS"]),
        .testTarget(name: "LookoutStagesTests",
                    dependencies: ["LookoutStages", "Lookout", "LookoutModel", "LookoutUpstream", "LookoutIO", "LookoutTLS",
                                   "LookoutHTTP", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "LookoutTests", dependencies: ["Lookout", "LookoutStages", "LookoutModel", "LookoutUpstream", "LookoutIO"]),
        .testTarget(name: "LookoutMonitorsTests",
                    dependencies: ["LookoutMonitors", "LookoutModel", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "LookoutMetricsTests", dependencies: ["LookoutMetrics", "LookoutAdmin", "LookoutModel", "LookoutTLS"]),
        .testTarget(name: "LookoutLiveTests", dependencies: ["LookoutLive", "LookoutModel"]),
        .testTarget(name: "LookoutRecordingsTests", dependencies: ["LookoutRecordings", "LookoutModel"]),
        .testTarget(name: "LookoutOTelTests", dependencies: ["LookoutOTel", "LookoutModel", "LookoutMessages", "CLookoutCompression"]),
        .testTarget(name: "LookoutMessagesTests", dependencies: ["LookoutMessages", "LookoutModel"]),
        .testTarget(name: "SystemLibraryTests", dependencies: ["LookoutTLS", "LookoutHTTP2"]),
        .testTarget(name: "LookoutTLSTests", dependencies: ["LookoutTLS"]),
        .testTarget(name: "LookoutLogQueryTests", dependencies: ["LookoutLogQuery"]),
        .testTarget(name: "LookoutCacheTests",
                    dependencies: ["LookoutCache", "LookoutHTTP", .product(name: "HTTPTypes", package: "swift-http-types")]),
    ]
)
