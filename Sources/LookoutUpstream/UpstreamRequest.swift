import HTTPTypes
import LookoutHTTP
import LookoutModel

/// What one upstream attempt sends: the origin, the head and how its body is framed.
/// A value, so a task never reaches back into the exchange that made it.
package struct UpstreamRequest: Sendable {
    package let origin: Origin
    package let method: HTTPRequest.Method
    /// The absolute URL requested, for the log and redirect resolution.
    package let url: String
    /// The head as it goes upstream: the target (origin-form, or absolute toward a parent) and
    /// the fields, adapted. An HTTP/1.1 connection gets them serialized (`UpstreamTask.use`), an
    /// HTTP/2 one as a header section (RFC 9113 §8.3.1): each attempt builds only what it sends.
    package let target: String
    package private(set) var fields: HTTPFields
    /// The body is re-chunked on this hop.
    package let bodyIsChunked: Bool
    /// The request has a body at all.
    package let hasBody: Bool
    /// A protocol switch (`Upgrade`) is asked for on this hop, so a 101 is expected.
    package let asksForUpgrade: Bool
    /// The client's `TE` named `trailers` (it takes a trailer section). Hop-by-hop on HTTP/1.1,
    /// so removed from `fields`; an HTTP/2 origin gets `te: trailers` (RFC 9113 §8.2.2), which
    /// gRPC servers require.
    package let acceptsTrailers: Bool

    /// Sets the field `name` to `value` (a per-attempt field: `traceparent`), in place: the
    /// fields are copied only while an earlier attempt's task still shares them.
    package mutating func set(_ name: HTTPField.Name, to value: String) {
        fields.setValue(value, for: name)
    }

    package init(origin: Origin, method: HTTPRequest.Method, url: String, target: String, fields: HTTPFields,
                 bodyIsChunked: Bool, hasBody: Bool, asksForUpgrade: Bool, acceptsTrailers: Bool) {
        self.origin = origin
        self.method = method
        self.url = url
        self.target = target
        self.fields = fields
        self.bodyIsChunked = bodyIsChunked
        self.hasBody = hasBody
        self.asksForUpgrade = asksForUpgrade
        self.acceptsTrailers = acceptsTrailers
    }
}
