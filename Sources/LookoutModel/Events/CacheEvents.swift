/// `cache.didEvict`: an object left the store — beyond `max_size_bytes` (`reason` "size_limit"),
/// or found damaged and removed ("corrupt").
public struct CacheDidEvict: EventKind {
    public static let name = "cache.didEvict"
    public var url: String?
    public var object: String
    public var bytes: Int64
    public var reason: String

    public init(url: String? = nil, object: String, bytes: Int64, reason: String) {
        self.url = url
        self.object = object
        self.bytes = bytes
        self.reason = reason
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        if let url { writer.field("url", url: url) }
        writer.field("object", object)
        if bytes >= 0 { writer.field("bytes", Int(bytes)) }
        writer.field("reason", reason)
    }
}
