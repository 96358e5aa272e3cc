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

extension Exchange {
    /// Called for every response head that is to be relayed: remembers whether it can be resumed.
    func noteResumable(status: Int, fields: HTTPFields, framing: BodyFraming) {
        guard head.method == .get, head.headerFields[.range] == nil else { return }
        let limit = environment.retrier.resumeLimit(forHost: attempts.request.origin.host)
        attempts.resume = ResumeState(status: status, fields: fields, framing: framing, limit: limit)
    }

    /// After a failure mid-body: asks again from where the client is, if the rule allows.
    func resumeAfter(_ error: ProxyError) -> Bool {
        guard case .upstreamFailed = error, var state = attempts.resume, state.resumes < state.limit, holding.response == nil, !finished
        else { return false }
        state.resumes += 1
        // A resumption that failed before its head stands for the first failure still.
        state.awaiting = state.awaiting ?? error
        attempts.resume = state
        attempts.request.set(.range, to: "bytes=\(state.offset)-")
        attempts.request.set(.ifRange, to: state.validator)
        emit(RequestDidResume(offset: state.offset, validator: state.validator, attempt: summary.attempts + 1,
                              reason: error.code))
        startAttempt()
        return true
    }

    /// The resumed attempt's head: spliced on when it continues the representation, else the
    /// response ends broken as it would have (nothing that does not belong is relayed).
    func resumedResponse(_ response: consuming ResponseHead, _ state: ResumeState, standingFor failure: ProxyError) -> Bool {
        attempts.resume?.awaiting = nil
        guard state.continues(response) else {
            attempts.resume = nil
            attempts.pendingPlan = .fail(failure)
            return false
        }
        return true
    }
}
