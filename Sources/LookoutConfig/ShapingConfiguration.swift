import LookoutTLS

/// `shaping`: per-host latency, bandwidth and injected faults, for testing clients.
extension LookoutConfiguration {
    public struct Shaping: Sendable, Equatable {
        /// `rules`: most specific host first, like every per-host rule.
        public var rules: [ShapingRuleSettings] = []
        public init() {}
    }
}

/// One `shaping.rules[i]`, with its profile's numbers already filled in where the rule left a key out.
public struct ShapingRuleSettings: Sendable, Equatable {
    public var hosts: [HostPattern] = []
    /// `profile`: the preset the numbers came from ("" = none).
    public var profile = ""
    /// `latency_ms`: added before the request goes upstream (and before a tunnel opens).
    public var latencyMilliseconds = 0.0
    /// `jitter_ms`: uniform ± around the latency.
    public var jitterMilliseconds = 0.0
    /// `download_kbps`: response bytes to the client, kilobits (1000 bits) per second; 0 = unlimited.
    public var downloadKbps = 0.0
    /// `upload_kbps`: request bytes to the origin; 0 = unlimited.
    public var uploadKbps = 0.0
    /// `faults.status`: `{code, rate}`, answered without the origin for that share of requests.
    public var faultStatus: Int?
    public var faultStatusRate = 1.0
    /// `faults.reset_after_bytes`: > 0 resets the client after that many response body bytes.
    public var resetAfterBytes = 0
    /// `faults.stall_ms`: > 0 holds the response body that long after its head.
    public var stallMilliseconds = 0.0

    public init() {}
}

/// The named presets of `shaping.rules[i].profile`: Chrome DevTools' throttling profiles. The
/// current ones (`slow-3g`, `fast-3g`, `fast-4g`; DevTools now calls the first two "3G" and
/// "Slow 4G") with their adjustment factors applied, and the earlier DevTools list (GPRS to WiFi).
public struct ShapingProfile: Sendable, Equatable {
    public let name: String
    public let latencyMilliseconds: Double
    public let downloadKbps: Double
    public let uploadKbps: Double
    /// Other names accepted for it.
    public let aliases: [String]

    public static let all: [ShapingProfile] = [
        // DevTools' Slow3GConditions: download and upload 500 kbit/s × 0.8, latency 400 ms × 5.
        ShapingProfile(name: "slow-3g", latencyMilliseconds: 2000, downloadKbps: 400, uploadKbps: 400, aliases: ["3g"]),
        // Fast3GConditions (now "Slow 4G"): 1.6 Mbit/s × 0.9 down, 750 kbit/s × 0.9 up, 150 ms × 3.75.
        ShapingProfile(name: "fast-3g", latencyMilliseconds: 562.5, downloadKbps: 1440, uploadKbps: 675, aliases: ["slow-4g"]),
        // Fast4GConditions: 9 Mbit/s × 0.9 down, 1.5 Mbit/s × 0.9 up, 60 ms × 2.75.
        ShapingProfile(name: "fast-4g", latencyMilliseconds: 165, downloadKbps: 8100, uploadKbps: 1350, aliases: []),
        // The earlier DevTools presets, as listed there (down/up kbit/s, latency ms).
        ShapingProfile(name: "gprs", latencyMilliseconds: 500, downloadKbps: 50, uploadKbps: 20, aliases: []),
        ShapingProfile(name: "regular-2g", latencyMilliseconds: 300, downloadKbps: 250, uploadKbps: 50, aliases: []),
        ShapingProfile(name: "good-2g", latencyMilliseconds: 150, downloadKbps: 450, uploadKbps: 150, aliases: []),
        ShapingProfile(name: "regular-3g", latencyMilliseconds: 100, downloadKbps: 750, uploadKbps: 250, aliases: []),
        ShapingProfile(name: "good-3g", latencyMilliseconds: 40, downloadKbps: 1500, uploadKbps: 750, aliases: []),
        ShapingProfile(name: "regular-4g", latencyMilliseconds: 20, downloadKbps: 4000, uploadKbps: 3000, aliases: []),
        ShapingProfile(name: "dsl", latencyMilliseconds: 5, downloadKbps: 2000, uploadKbps: 1000, aliases: []),
        ShapingProfile(name: "wifi", latencyMilliseconds: 2, downloadKbps: 30000, uploadKbps: 15000, aliases: []),
    ]

    public static func named(_ name: String) -> ShapingProfile? {
        let key = name.lowercased()
        return all.first { $0.name == key || $0.aliases.contains(key) }
    }
}
