import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// An answer whose head comes later (`StageVerdict.answerLater`, a collapsed cache miss): its head
/// through the response stages once it arrives, its body as it grows, or a fetch of its own when
/// nothing usable comes.
extension Exchange {
    func answerLater(_ answer: any DeferredAnswer) {
        reply.producer = .deferred(answer)
        // Told on this exchange's loop whenever there may be more to send.
        answer.start(on: context.loop) { [weak self] in self?.advanceDeferred(afterDrain: false) }
        advanceDeferred(afterDrain: false)
    }

    /// Sends what the deferred answer has now, or goes upstream when it withdraws.
    func advanceDeferred(afterDrain: Bool) {
        guard case .deferred(let answer)? = reply.producer, !finished else { return }
        var refusal: ProxyError?
        var fetchesItself = false
        let progress = answer.advance(client: client, afterDrain: afterDrain, observe: { [self] in responseBodyPassed($0) }) {
            status, reason, fields, framing in
            summary.status = status
            decideKeepAlive(possible: requestEnded && framing != .untilClose, fields: &fields)
            switch runResponseStages(status: status, reasonPhrase: reason, fields: &fields) {
            case .proceed:
                sendResponseHead(status: status, reasonPhrase: reason, fields: fields, framing: framing)
                return true
            case .fail(let error):
                refusal = error
            case .hold:
                // A deferred head cannot wait (a collapsed miss's fill goes on for the others):
                // this exchange fetches for itself, and the stage sees the response it gets.
                fetchesItself = true
            }
            return false
        }
        switch progress {
        case .waiting:
            return
        case .done:
            reply.producer = nil
            if let refusal {
                fail(refusal)
            } else if fetchesItself {
                fetchItself(instead: answer)
            } else {
                responseBodyEnded()
                finish(error: nil, keepAlive: reply.keepAlive)
            }
        case .failed:
            reply.producer = nil
            finish(error: answer.failure, keepAlive: false, truncate: reply.headSent)
        case .goUpstream:
            reply.producer = nil
            fetchItself(instead: answer)
        }
    }

    /// Nothing usable came from the deferred answer: the request goes upstream after all, bodiless
    /// (only a bodiless GET is ever collapsed).
    private func fetchItself(instead answer: any DeferredAnswer) {
        answer.withdraw(exchange: self)
        upstream.startFirst(withBody: false, owner: self)
    }
}
