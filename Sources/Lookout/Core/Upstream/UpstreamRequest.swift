import HTTPTypes
import LookoutHTTP

/// What one upstream attempt sends: the origin, the serialized head and how its body is framed.
/// A value, so a task never reaches back into the exchange that made it.
struct UpstreamRequest: Sendable {
    let origin: Origin
    let method: HTTPRequest.Method
    /// The absolute URL requested, for the log and redirect resolution.
    let url: String
    /// The head as it goes upstream, serialized once (retries resend it).
    let head: [UInt8]
    /// The body is re-chunked on this hop.
    let bodyIsChunked: Bool
    /// The request has a body at all.
    let hasBody: Bool
    /// A protocol switch (`Upgrade`) is asked for on this hop, so a 101 is expected.
    let asksForUpgrade: Bool
}
