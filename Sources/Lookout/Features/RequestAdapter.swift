import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// The upstream request being prepared, as adapters see it.
public struct UpstreamRequestHead: Sendable {
    public var method: HTTPRequest.Method
    /// Origin-form target sent upstream ("/path?query").
    public var target: String
    /// "host:port" of the origin.
    public var authority: String
    public var headerFields: HTTPFields
}

/// Changes a request before it goes upstream (header rules), like Alamofire's `RequestAdapter`.
public protocol RequestAdapter: Sendable {
    func adapt(_ head: inout UpstreamRequestHead)
}

/// Adds `Via` to requests and responses (RFC 9110 §7.6.3).
public struct ViaHeaderAdapter: RequestAdapter {
    public static let value = "1.1 lookout"
    public init() {}

    public func adapt(_ head: inout UpstreamRequestHead) {
        head.headerFields.appendField(HTTPField(name: .via, value: Self.value))
    }
}
