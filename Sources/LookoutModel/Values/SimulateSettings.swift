/// The `simulate` section: answer from recordings instead of (or before) the origins.
public struct SimulateSettings: Sendable, Equatable {
    public enum Mode: String, Sendable, Equatable {
        /// Recordings are not consulted.
        case off
        /// Only recordings answer; an unmatched request is `502 simulation_miss`.
        case simulate
        /// Recordings answer what they can; the rest goes upstream.
        case spy
    }

    public enum Repeat: String, Sendable, Equatable {
        /// The same request gets the recorded answers in order, then the last one again.
        case sequence
        /// Always the first recorded answer.
        case first
        /// The recorded answers in order, then from the start again.
        case cycle
    }

    public var recordings: [String] = []
    public var mode = Mode.off
    /// What a request must share with a recorded one: `method`, `url`, `body`.
    public var matchMethod = true
    public var matchURL = true
    public var matchBody = false
    /// Request fields that must also be equal (names as written).
    public var matchHeaders: [String] = []
    /// Query parameters left out of the URL's comparison.
    public var ignoreQuery: [String] = []
    /// JSON body paths left out of the body's comparison.
    public var ignoreJSON: [String] = []
    public var repetition = Repeat.sequence
    /// Wait as long as the recording waited for the first byte.
    public var recordedLatency = false

    public init() {}
}
