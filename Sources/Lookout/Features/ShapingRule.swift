import LookoutModel
import LookoutUpstream
/// One `shaping.rules[i]`, ready to apply: latency before the request goes upstream (or a tunnel
/// opens), pacing of each direction, and the faults it injects.
public struct ShapingRule: Sendable {
    /// The rule's host patterns, for records.
    public var name: String
    /// The preset its numbers came from ("" = none).
    public var profile: String
    /// Seconds.
    public var latency: Double
    public var jitter: Double
    /// Kilobits (1000 bits) per second; 0 = unlimited.
    public var downloadKbps: Double
    public var uploadKbps: Double
    public var faultStatus: Int?
    /// The share of requests answered `faultStatus`, 0…1.
    public var faultStatusRate: Double
    /// > 0: the client is reset after this many response body bytes.
    public var resetAfterBytes: UInt64
    /// Seconds the response body is held after its head.
    public var stall: Double

    public init(name: String, profile: String = "", latency: Double = 0, jitter: Double = 0, downloadKbps: Double = 0,
                uploadKbps: Double = 0, faultStatus: Int? = nil, faultStatusRate: Double = 1, resetAfterBytes: UInt64 = 0,
                stall: Double = 0) {
        self.name = name
        self.profile = profile
        self.latency = latency
        self.jitter = jitter
        self.downloadKbps = downloadKbps
        self.uploadKbps = uploadKbps
        self.faultStatus = faultStatus
        self.faultStatusRate = faultStatusRate
        self.resetAfterBytes = resetAfterBytes
        self.stall = stall
    }

    var downloadBytesPerSecond: Double { downloadKbps * 125 }
    var uploadBytesPerSecond: Double { uploadKbps * 125 }

    /// The latency for one exchange or tunnel: uniform within ± jitter, never below zero.
    func drawLatency() -> Double {
        guard jitter > 0 else { return latency }
        return max(0, latency + Double.random(in: -jitter...jitter))
    }

    /// Whether this request gets the injected status (drawn once per request).
    package func drawsFaultStatus() -> Bool {
        guard faultStatus != nil, faultStatusRate > 0 else { return false }
        return faultStatusRate >= 1 || Double.random(in: 0..<1) < faultStatusRate
    }

    /// What the rule does to one exchange or tunnel, with the latency drawn for it (seconds): its
    /// `request.didShape` / `tunnel.didShape` record and the summary's `shaping`.
    func applied(latency: Double) -> ShapingSummary {
        ShapingSummary(rule: name, profile: profile, latencyMilliseconds: latency * 1000,
                       downloadKbps: downloadKbps, uploadKbps: uploadKbps)
    }

    /// The response to the client is paced, held or cut.
    var shapesResponse: Bool { downloadKbps > 0 || resetAfterBytes > 0 || stall > 0 }
}
