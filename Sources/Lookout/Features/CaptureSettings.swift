import LookoutTLS
import LookoutModel
import LookoutUpstream

/// One `capture.rules[i]`: which bodies of a host's exchanges are written, and how much of each.
public struct CaptureRule: Sendable, Equatable {
    public var name: String
    public var requestBodies: Bool
    public var responseBodies: Bool
    public var maxBodyBytes: Int64

    public init(name: String, requestBodies: Bool = true, responseBodies: Bool = true, maxBodyBytes: Int64 = 1 << 20) {
        self.name = name
        self.requestBodies = requestBodies
        self.responseBodies = responseBodies
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Where captured bodies go and for which hosts (config `capture`).
public struct CaptureSettings: Sendable {
    public var directory: String
    public var maxTotalBytes: Int64
    public var rules: HostRuleSet<CaptureRule>

    public init(directory: String, maxTotalBytes: Int64 = 1 << 30, rules: HostRuleSet<CaptureRule>) {
        self.directory = directory
        self.maxTotalBytes = maxTotalBytes
        self.rules = rules
    }
}
