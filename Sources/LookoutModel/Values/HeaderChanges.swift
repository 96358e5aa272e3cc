import HTTPTypes

/// What a header rule changed in one message, for its event.
public struct HeaderChanges: Sendable {
    public var set = HTTPFields()
    public var added = HTTPFields()
    /// Lowercased names.
    public var removed: [String] = []
    public init() {}
}
