import HTTPTypes
import LookoutHTTP
import LookoutUpstream

/// One hop's request head from the exchange's, before the stages see it: hop-by-hop fields
/// removed (RFC 9110 §7.6.1), Host from the target (RFC 9112 §3.2.2), framing fields in canonical
/// form, the protocol switch asked for again, credentials kept to the first host, and a plain
/// request through a parent in absolute form with the parent's credentials.
enum HopRequestHead {
    /// The head (as the stages' `UpstreamAdaptation`) and whether its body goes chunked.
    /// `hostField`: the Host the first hop carries instead of the target's (a map rule's
    /// `preserve_host`, an edit). `passesProxyAuthorization`: Lookout asks for no credentials,
    /// so the client's `Proxy-Authorization` is meant for a parent.
    static func make(from head: RequestHead, method: HTTPRequest.Method, origin: Origin, path: String, withBody: Bool,
                     stripCredentials: Bool, hostField: String?, upgrade: String?,
                     passesProxyAuthorization: Bool) -> (UpstreamAdaptation, chunked: Bool) {
        // Built in place inside the head the stages change: a separate copy would be copied
        // again by the first stage that appends a field (one allocation per request).
        var adaptation = UpstreamAdaptation(
            head: UpstreamRequestHead(method: method, target: path, authority: origin.authority, headerFields: head.headerFields),
            origin: origin)
        // The fields are still the client's (the summary logs them), so the first change copies
        // them; reserving room for Host and Via makes that copy the only allocation — set in
        // place, Host copied them at their exact size and the appended Via grew them again.
        adaptation.head.headerFields.reserveCapacity(head.headerFields.count + 2)
        adaptation.head.headerFields.setValue(hostField ?? origin.hostFieldValue, for: .host)
        HopByHopHeaders.remove(from: &adaptation.head.headerFields)
        var chunked = false
        if withBody {
            switch head.framing {
            case .chunked:
                // Re-chunked hop by hop; codings before "chunked" (e.g. gzip) describe the body itself.
                adaptation.head.headerFields[.transferEncoding] = TransferCoding.canonicalField(head.headerFields)
                chunked = true
            case .contentLength(let length):
                // RFC 9110 §8.6: a list of identical values goes on as one value, so the next hop
                // cannot frame the body differently.
                if head.contentLengthIsList { adaptation.head.headerFields[.contentLength] = String(length) }
            default:
                break
            }
        } else if head.framing != .none {
            // RFC 9110 §15.4: a redirect that turns the request into a GET drops the content and the
            // fields that describe it.
            for name in [HTTPField.Name.contentLength, .contentType, .contentEncoding, .contentLanguage, .contentLocation] {
                adaptation.head.headerFields[name] = nil
            }
        }
        if let upgrade {
            // Hop-by-hop, so removed above; asked for again on this hop.
            adaptation.head.headerFields[.connection] = "upgrade"
            adaptation.head.headerFields[.upgrade] = upgrade
        }
        if stripCredentials {
            // Credentials meant for the first host are not sent to another one.
            adaptation.head.headerFields[.authorization] = nil
            adaptation.head.headerFields[.cookie] = nil
        }
        if let parent = origin.parent, !origin.isSecure {
            // Through a parent, a plain request names its whole URL (RFC 9112 §3.2.2), and carries
            // the parent's credentials; https goes through a CONNECT instead (the opener's).
            adaptation.head.target = origin.url(path: path)
            if let authorization = parent.authorization {
                adaptation.head.headerFields[.proxyAuthorization] = authorization
            } else if passesProxyAuthorization, let own = head.headerFields[.proxyAuthorization] {
                // Lookout asks for no credentials and the rule gives none: the client's are for the parent.
                adaptation.head.headerFields[.proxyAuthorization] = own
            }
        }
        return (adaptation, chunked)
    }

    /// The client's `TE` lists `trailers` (RFC 9110 §10.1.4).
    static func acceptsTrailers(_ head: RequestHead) -> Bool {
        guard let te = head.headerFields.value(for: .te) else { return false }
        return FieldList.contains("trailers", in: te)
    }
}
