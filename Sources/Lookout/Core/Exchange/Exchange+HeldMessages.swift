import HTTPTypes
import LookoutHTTP
import LookoutModel
import LookoutUpstream

/// A request a stage holds with its body (`holdWithBody`), and the edits a stage applies to it
/// before it goes upstream. A body is read only up to the stage's limit; a longer one is held on
/// its head alone. (A held response is the response's: `ClientResponse`.)
extension Exchange {
    // MARK: - Request

    /// The stage holds the request head and wants its body, up to `limit` bytes.
    func holdRequest(by stage: any ExchangeStage, limit: Int, deadline: Double?) {
        hold(by: stage, deadline: deadline)
        let announced: UInt64? = if case .contentLength(let length) = head.framing { length } else { nil }
        if head.framing == .none || (upload?.received ?? 0) > 0 || announced.map({ $0 > UInt64(limit) }) == true {
            // Nothing to read, too long to hold, or already on its way (an earlier stage held the
            // exchange while it arrived): the stage hears on the next turn what there is.
            let complete = head.framing == .none
            context.loop.execute { [weak self] in
                guard let self, !finished, holding.stage === stage else { return }
                stage.requestBodyHeld([], complete: complete, exchange: self)
            }
            return
        }
        holding.requestBody = HeldRequestBody(limit: limit)
        if upload?.unpause() == true { resumeClientInput() }
    }

    /// Body bytes while the request is held for its body; false once they overflowed the limit
    /// (the caller then sends them on as usual).
    func collectHeldRequestBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let held = holding.requestBody, !held.reported else { return false }
        held.bytes.append(contentsOf: bytes)
        guard held.bytes.count > held.limit else { return true }
        // Too long to hold: what was read goes on as it came, and the stage sees its beginning.
        held.reported = true
        holding.requestBody = nil
        let beginning = Array(held.bytes.prefix(held.limit))
        held.bytes.withUnsafeBytes { routeBody($0) }
        holding.stage?.requestBodyHeld(beginning, complete: false, exchange: self)
        return true
    }

    /// The client's body ended while held for it: the stage sees all of it.
    func heldRequestBodyEnded() {
        guard let held = holding.requestBody, !held.reported else { return }
        held.reported = true
        holding.stage?.requestBodyHeld(held.bytes, complete: true, exchange: self)
    }

    /// The hold is over: the body read while held goes on toward the upstream (the attempt, when
    /// it starts, takes it with the rest).
    func releaseHeldRequestBody() {
        guard let held = holding.requestBody else { return }
        holding.requestBody = nil
        if !held.bytes.isEmpty { held.bytes.withUnsafeBytes { routeBody($0) } }
    }

    func editRequest(_ edits: ExchangeEdits) -> String? {
        guard holding.stage != nil, holding.response == nil, !finished else { return "the request is not held" }
        let whole = head.framing == .none || (holding.requestBody?.reported == true && requestEnded)
        let checked: CheckedRequestEdits
        switch CheckedRequestEdits.check(edits, against: head, bodyHeldWhole: whole) {
        case .failure(let refusal): return refusal.message
        case .success(let edits): checked = edits
        }
        if holding.clientHead == nil { holding.clientHead = head }
        if let method = checked.method { head.method = method }
        if let body = checked.body {
            head.framing = .contentLength(UInt64(body.count))
            head.contentLengthIsList = false
            let held = holding.requestBody ?? HeldRequestBody(limit: body.count)
            held.bytes = body
            held.reported = true
            holding.requestBody = held
            let relay = upload ?? RequestBodyRelay(keeping: nil)
            relay.replaced()
            upload = relay
        }
        if let host = checked.hostField { upstream.ledger.hostOverride = host }
        head.headerFields = checked.fields
        if let route = checked.route { reroute(to: route, hostField: nil) }
        return nil
    }
}
