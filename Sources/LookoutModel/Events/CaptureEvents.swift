/// `capture.didFail`: a body's file could not be written; its capture stops, the exchange goes on.
public struct CaptureDidFail: EventKind {
    public static let name = "capture.didFail"
    /// "request" or "response".
    public var body: String
    public var path: String
    public var error: String

    public init(body: String, path: String, error: String) {
        self.body = body
        self.path = path
        self.error = error
    }

    public func encode<Writer: EventFieldWriter & ~Copyable>(to writer: inout Writer) {
        writer.field("body", body)
        writer.field("path", path)
        writer.field("error", error)
    }
}
