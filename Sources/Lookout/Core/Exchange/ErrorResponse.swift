import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// The short response a client gets when an exchange fails: status, `X-Lookout-Error: code`, and a
/// one-line body `lookout: code: message`.
enum ErrorResponse {
    static let errorHeader = HTTPField.Name("X-Lookout-Error")!
    /// The request id, so a client can find the exchange in the log.
    static let idHeader = HTTPField.Name("X-Lookout-Id")!

    static func bytes(for error: ProxyError, closeConnection: Bool, requestID: UInt64? = nil) -> [UInt8] {
        var response = parts(for: error, requestID: requestID)
        if closeConnection { response.fields[.connection] = "close" }
        var bytes = HTTPSerializer.responseHead(status: response.status, reasonPhrase: ReasonPhrase.standard(for: response.status),
                                                version: .http1_1, headerFields: response.fields)
        bytes += response.body
        return bytes
    }

    /// The response as status, fields and body, for a writer that frames it itself (HTTP/2).
    static func parts(for error: ProxyError, requestID: UInt64?) -> (status: Int, fields: HTTPFields, body: [UInt8]) {
        let status = error.status ?? 500
        let body = Array("lookout: \(error.code): \(error.message)\n".utf8)
        var fields = HTTPFields()
        fields[.contentType] = "text/plain; charset=utf-8"
        fields[.contentLength] = String(body.count)
        fields[errorHeader] = error.code
        if let requestID { fields[ErrorResponse.idHeader] = String(requestID) }
        if case .upstreamFailed(.parentProxyAuthenticationRequired(_, let challenges)) = error {
            for challenge in challenges { fields.append(HTTPField(name: .proxyAuthenticate, value: challenge)) }
        } else if status == 407 {
            fields[.proxyAuthenticate] = ProxyAuthenticator.challenge
        }
        if case .requestRejected(.adminTokenRequired) = error {
            fields[.wwwAuthenticate] = "Bearer realm=\"lookout\""  // RFC 6750 §3
        }
        if case .accessDenied(.methodNotAllowed(_, let allowed)) = error {
            fields[.allow] = allowed.joined(separator: ", ")  // RFC 9110 §15.5.6
        }
        if case .accessDenied(.rateLimited(let seconds)) = error {
            fields[.retryAfter] = String(seconds)  // RFC 6585 §4, RFC 9110 §10.2.3
        }
        fields[.via] = ViaHeaderAdapter.value
        return (status, fields, body)
    }
}
