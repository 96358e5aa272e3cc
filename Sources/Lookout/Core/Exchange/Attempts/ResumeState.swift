import HTTPTypes
import LookoutHTTP
import LookoutModel

/// A GET response that may be resumed where it broke off (`retry.rules[i].resume`, the seeds'
/// `resumeData`): what was promised, what the client has, and the failure a resumption stands for.
struct ResumeState {
    /// The strong validator sent as `If-Range` (RFC 9110 §13.1.5): the ETag, else Last-Modified.
    let validator: String
    let isETag: Bool
    /// The representation's length, when the first response gave it.
    let completeLength: UInt64?
    let limit: Int
    /// Body bytes relayed to the client.
    var offset: UInt64 = 0
    var resumes = 0
    /// Set while a resumption is on its way: the failure it stands in for.
    var awaiting: ProxyError?

    /// A state for a response that can be resumed, or nil: a 200 with a strong validator — a
    /// strong ETag, or a Last-Modified at least 60 s before its Date (RFC 9110 §8.8.2.2).
    init?(status: Int, fields: HTTPFields, framing: BodyFraming, limit: Int) {
        guard limit > 0, status == 200 else { return nil }
        if let etag = fields.value(for: .eTag), etag.hasPrefix("\"") {
            validator = etag
            isETag = true
        } else if let modified = fields.value(for: .lastModified), let date = fields.value(for: .date),
                  let m = HTTPDate.unixSeconds(modified), let d = HTTPDate.unixSeconds(date), d - m >= 60 {
            validator = modified
            isETag = false
        } else {
            return nil
        }
        if case .contentLength(let length) = framing { completeLength = UInt64(length) } else { completeLength = nil }
        self.limit = limit
    }

    /// Whether `response` continues the representation at `offset`: a 206 whose Content-Range
    /// starts there and runs to the end, with the same validator and length.
    func continues(_ response: ResponseHead) -> Bool {
        guard response.status == 206, let text = response.headerFields[.contentRange], let range = ContentRange(text),
              range.first == offset else { return false }
        if let completeLength {
            guard range.completeLength == completeLength, range.last == completeLength - 1 else { return false }
        } else if let length = range.completeLength, range.last != length - 1 {
            return false
        }
        let echoed = response.headerFields[isETag ? .eTag : .lastModified]
        return echoed == nil || echoed == validator
    }
}
