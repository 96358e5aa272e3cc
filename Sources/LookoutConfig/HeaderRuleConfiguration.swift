import LookoutTLS

/// One `headers.rules[i]`: field edits for the requests to, and the responses from, the hosts it
/// names (matched most specific first, like `trust.rules`).
public struct HeaderRuleSettings: Sendable, Equatable {
    /// One `name: value` of a `set` or `add` mapping, as written.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// `request` or `response`: applied in the order remove, set, add.
    public struct Edits: Sendable, Equatable {
        /// `set`: replaces every line of the field, or adds it.
        public var set: [Field] = []
        /// `add`: appends another line, keeping those already there.
        public var add: [Field] = []
        /// `remove`: drops every line of the field.
        public var remove: [String] = []
        public init() {}
        public var isEmpty: Bool { self.set.isEmpty && add.isEmpty && remove.isEmpty }
    }

    public var hosts: [HostPattern] = []
    public var request = Edits()
    public var response = Edits()
    public init() {}

    /// Fields a rule may not touch: the hop-by-hop fields (RFC 9110 §7.6.1), the ones that frame
    /// the message (RFC 9112 §6) and `Host` (RFC 9110 §7.2), all of which Lookout sets itself per hop.
    public static let protectedNames: Set<String> = [
        "connection", "content-length", "transfer-encoding", "host", "upgrade", "keep-alive",
        "proxy-connection", "te", "trailer", "proxy-authenticate", "proxy-authorization",
    ]
}
