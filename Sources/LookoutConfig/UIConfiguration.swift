/// `ui`: the live event stream (and, on top of it, the web UI).
extension LookoutConfiguration {
    public struct UI: Sendable, Equatable {
        /// `enabled`: keep recent records and serve `/events` and `/exchanges`.
        public var enabled = true
        /// `ring_size`: records kept in memory for `/exchanges` and for resuming streams.
        public var ringSize = 10_000
        /// `heartbeat`: seconds between the comment lines that keep an idle stream open.
        public var heartbeat: Double = 15
        public init() {}
    }
}
