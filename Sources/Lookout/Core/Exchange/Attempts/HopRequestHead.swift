import HTTPTypes
import LookoutHTTP
import LookoutUpstream

/// One hop's request head from the exchange's, before the stages see it: hop-by-hop fields
/// removed (RFC 9110 §7.6.1), Host from the target (RFC 9112 §3.2.2), framing fields in canonical
/// form, the protocol switch asked for again, credentials kept to the first host, and a plain
/// request through a parent in absolute form with the parent's credentials.
enum HopRequestHead {
    /// Prepares the head the stages then change (`adaptation`, made with the client's `fields`)
    /// from the client's `fields` and `framing` (its body goes chunked when
    /// `isChunked(framing:withBody:)`); changed in place, since a returned head is copied on the
    /// way back, every field retained. `hostField`: the Host the
    /// first hop carries instead of the target's (a map rule's `preserve_host`, an edit).
    /// `passesProxyAuthorization`: Lookout asks for no credentials, so the client's
    /// `Proxy-Authorization` is meant for a parent. The client's head is passed in parts: passed
    /// whole from the exchange, it would be copied, every string of it retained.
    static func prepare(_ adaptation: inout UpstreamAdaptation, fields: HTTPFields, framing: BodyFraming,
                        contentLengthIsList: Bool, path: String, withBody: Bool, stripCredentials: Bool, hostField: String?,
                        upgrade: String?, passesProxyAuthorization: Bool) {
        let origin = adaptation.origin
        // The fields are still the client's (the summary logs them), so the first change copies
        // them; reserving room for Host and Via makes that copy the only allocation — set in
        // place, Host copied them at their exact size and the appended Via grew them again.
        adaptation.head.headerFields.reserveCapacity(fields.count + 2)
        adaptation.head.headerFields.setValue(hostField ?? origin.hostFieldValue, for: .host)
        HopByHopHeaders.remove(from: &adaptation.head.headerFields)
        if withBody {
            switch framing {
            case .chunked:
                // Re-chunked hop by hop; codings before "chunked" (e.g. gzip) describe the body itself.
                adaptation.head.headerFields[.transferEncoding] = TransferCoding.canonicalField(fields)
            case .contentLength(let length):
                // RFC 9110 §8.6: a list of identical values goes on as one value, so the next hop
                // cannot frame the body differently.
                if contentLengthIsList { adaptation.head.headerFields[.contentLength] = String(length) }
            default:
                break
            }
        } else if framing != .none {
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
        if let parent = origin.parent, parent.forwardsPlainRequests, !origin.isSecure {
            // Through a parent, a plain request names its whole URL (RFC 9112 §3.2.2), and carries
            // the parent's credentials; https goes through a CONNECT instead (the opener's).
            adaptation.head.target = origin.url(path: path)
            if let authorization = parent.authorization {
                adaptation.head.headerFields[.proxyAuthorization] = authorization
            } else if passesProxyAuthorization, let own = fields[.proxyAuthorization] {
                // Lookout asks for no credentials and the rule gives none: the client's are for the parent.
                adaptation.head.headerFields[.proxyAuthorization] = own
            }
        }
    }

    /// A body that goes on is re-chunked hop by hop when the client chunked it.
    static func isChunked(framing: BodyFraming, withBody: Bool) -> Bool {
        guard withBody, case .chunked = framing else { return false }
        return true
    }

    /// The client's `TE` lists `trailers` (RFC 9110 §10.1.4).
    static func acceptsTrailers(_ fields: HTTPFields) -> Bool {
        guard let te = fields.value(for: .te) else { return false }
        return FieldList.contains("trailers", in: te)
    }
}
