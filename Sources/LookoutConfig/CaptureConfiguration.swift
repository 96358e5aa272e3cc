import LookoutTLS

/// `capture`: request and response bodies written to files, per host.
extension LookoutConfiguration {
    public struct Capture: Sendable, Equatable {
        /// `path`: where the files go; "" = `<state_dir>/capture`.
        public var path = ""
        /// `max_total_bytes`: the oldest captures are deleted beyond it.
        public var maxTotalBytes = 1_073_741_824
        /// `rules`: most specific first; a host no rule names is not captured.
        public var rules: [CaptureRuleSettings] = []
        public init() {}
    }
}

/// One `capture.rules[i]`.
public struct CaptureRuleSettings: Sendable, Equatable {
    public var hosts: [HostPattern] = []
    /// `request_bodies`, `response_bodies`: which bodies are written.
    public var requestBodies = true
    public var responseBodies = true
    /// `max_body_bytes`: per body; beyond it the file is cut and marked truncated.
    public var maxBodyBytes = 1_048_576
    public init() {}
}
