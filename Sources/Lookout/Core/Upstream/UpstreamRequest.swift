import HTTPTypes
import LookoutHTTP

/// What one upstream attempt sends: the origin, the serialized head and how its body is framed.
/// A value, so a task never reaches back into the exchange that made it.
struct UpstreamRequest: Sendable {
    let origin: Origin
    let method: HTTPRequest.Method
    /// The absolute URL requested, for the log and redirect resolution.
    let url: String
    /// The head as it goes upstream over HTTP/1.1, serialized once (retries resend it).
    let head: [UInt8]
    /// The same head's target and fields, for an HTTP/2 origin (which gets them as a header
    /// section instead, RFC 9113 §8.3.1).
    let target: String
    let fields: HTTPFields
    /// The body is re-chunked on this hop.
    let bodyIsChunked: Bool
    /// The request has a body at all.
    let hasBody: Bool
    /// A protocol switch (`Upgrade`) is asked for on this hop, so a 101 is expected.
    let asksForUpgrade: Bool
    /// The client's `TE` named `trailers` (it takes a trailer section). Hop-by-hop on HTTP/1.1,
    /// so removed from `fields`; an HTTP/2 origin gets `te: trailers` (RFC 9113 §8.2.2), which
    /// gRPC servers require.
    let acceptsTrailers: Bool
}
