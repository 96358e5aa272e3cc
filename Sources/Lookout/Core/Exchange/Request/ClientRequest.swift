import HTTPTypes
import LookoutModel
import LookoutUpstream

/// The request body's way from the client to the attempts: upload pacing first, then the stages
/// that watch the body, the body limit, a stage's hold on it (`holdWithBody`), and the relay that
/// feeds each attempt (`RequestBodyRelay`). Made only for a request with a body (or one a stage
/// gives a body): a bodiless exchange has none. It owns the relay and the held body; the exchange
/// is passed to each call (`RequestOwner`), borrowed for it, never stored. It answers whether the
/// client may be read, and asks the connection for more on a later turn of the loop, never on
/// the stack that delivered the bytes.
final class ClientRequest<Owner: RequestOwner>: @unchecked Sendable {  // confined to the exchange's loop queue
    /// The body's relay toward the attempts.
    private let upload: RequestBodyRelay
    /// The body a stage holding the request reads, up to its limit.
    private var held: HeldRequestBody?

    /// `replay`: where the body is kept for another attempt, when a rule may need it.
    init(keeping replay: ReplayableBody?) {
        upload = RequestBodyRelay(keeping: replay)
    }

    /// The origin's rules changed (a stage rerouted the request): whether the body is kept for
    /// another attempt follows the new ones, as long as none of it was read.
    func keep(_ replay: ReplayableBody?) {
        upload.keep(replay)
    }

    /// The body has ended.
    var ended: Bool { upload.ended }

    /// Body bytes the client sent so far.
    var received: UInt64 { upload.received }

    /// Whether another attempt can send the body again (kept whole so far).
    var isReplayable: Bool { upload.isReplayable }

    /// The upstream (or the copy kept for another attempt) is backed up.
    var pausedForUpstream: Bool { upload.pausedForUpstream }

    /// False while the body is complete or the upstream (or the upload pacing) cannot take more yet.
    func accepts(owner: Owner) -> Bool {
        !upload.ended && !upload.pausedForUpstream && !owner.finished && !(owner.shaping?.holdsRequestBody ?? false)
    }

    // MARK: - The client's bytes

    func clientSent(_ bytes: UnsafeRawBufferPointer, owner: Owner) {
        guard !owner.finished else { return }
        if let uploadPacer = owner.shaping?.upload {
            // What the rate does not allow yet waits in the pacer; `accepts` stops the client meanwhile.
            _ = uploadPacer.send(bytes)
            return
        }
        take(bytes, owner: owner)
    }

    /// Body bytes on their way upstream (after any upload pacing).
    func take(_ bytes: UnsafeRawBufferPointer, owner: Owner) {
        guard !owner.finished else { return }
        owner.forEachStage { $0.requestBody(bytes, exchange: owner) }
        let limit = owner.environment.maxRequestBodyBytes
        if upload.count(bytes.count) > limit && limit > 0 {
            owner.fail(.requestRejected(reason: .requestBodyTooLarge(limit: limit)))
            return
        }
        if upload.dropped { return }
        if held != nil, collectHeld(bytes, owner: owner) { return }
        route(bytes, owner: owner)
    }

    /// Bytes toward the upstream, through the relay.
    private func route(_ bytes: UnsafeRawBufferPointer, owner: Owner) {
        if upload.route(bytes, to: owner.upstream.task) { resumeClient(owner: owner) }
    }

    func clientFinished(trailers: HTTPFields?, owner: Owner) {
        guard !owner.finished else { return }
        if let shaping = owner.shaping, let uploadPacer = shaping.upload, uploadPacer.isHolding {
            shaping.requestEndWaits = true
            uploadPacer.whenFlushed { [weak self, weak owner] in
                guard let self, let owner else { return }
                owner.shaping?.requestEndWaits = false
                bodyEnded(trailers: trailers, owner: owner)
            }
            return
        }
        bodyEnded(trailers: trailers, owner: owner)
    }

    private func bodyEnded(trailers: HTTPFields?, owner: Owner) {
        guard !owner.finished else { return }
        owner.forEachStage { $0.requestEnd(exchange: owner) }
        upload.end(trailers: trailers)
        if held != nil { heldBodyEnded(owner: owner) }
        if upload.feed(owner.upstream.task) { resumeClient(owner: owner) }
    }

    /// Nothing goes upstream any more (an answer, a redirect turned into a GET): a held body is
    /// let go, and the rest of the client's is read and dropped.
    func drop(owner: Owner) {
        held = nil
        if upload.drop() { resumeClient(owner: owner) }
    }

    /// Asks the connection for more input on the next turn of the loop, never on this stack.
    func resumeClient(owner: Owner) {
        owner.context.loop.execute { [weak owner] in
            guard let owner, !owner.finished else { return }
            // The pacer sends what it held first; its timer asks for more once the rate allows.
            if let uploadPacer = owner.shaping?.upload, !uploadPacer.sinkDidDrain() { return }
            owner.delegate.exchangeCanTakeInput()
        }
    }

    // MARK: - Each attempt

    /// An attempt starts: the body is sent again from its start, or goes on.
    func attemptStarts() {
        upload.attemptStarts()
    }

    /// The attempt's head is on its way: it gets the body.
    func attemptIsReady(_ task: UpstreamTask, owner: Owner) {
        if upload.attemptIsReady(task) { resumeClient(owner: owner) }
    }

    func attemptDrained(_ task: UpstreamTask, owner: Owner) {
        if upload.feed(task) { resumeClient(owner: owner) }
    }

    // MARK: - A stage holding the body

    /// `stage` holds the request head and wants its body, up to `limit` bytes.
    func hold(for stage: any ExchangeStage, limit: Int, owner: Owner) {
        let announced: UInt64? = if case .contentLength(let length) = owner.head.framing { length } else { nil }
        if received > 0 || announced.map({ $0 > UInt64(limit) }) == true {
            // Too long to hold, or already on its way (an earlier stage held the exchange while
            // it arrived): the stage hears on the next turn that it gets none of it.
            Self.tellLater(stage, complete: false, owner: owner)
            return
        }
        held = HeldRequestBody(limit: limit)
        if upload.unpause() { resumeClient(owner: owner) }
    }

    /// The holding stage hears on the next turn that there is no body to see (`complete`: the
    /// request has none).
    static func tellLater(_ stage: any ExchangeStage, complete: Bool, owner: Owner) {
        owner.context.loop.execute { [weak owner] in
            guard let owner, !owner.finished, owner.holding.stage === stage else { return }
            stage.requestBodyHeld([], complete: complete, exchange: owner)
        }
    }

    /// Body bytes while the request is held for its body; false once they overflowed the limit
    /// (the caller then sends them on as usual).
    private func collectHeld(_ bytes: UnsafeRawBufferPointer, owner: Owner) -> Bool {
        guard let held, !held.reported else { return false }
        held.bytes.append(contentsOf: bytes)
        guard held.bytes.count > held.limit else { return true }
        // Too long to hold: what was read goes on as it came, and the stage sees its beginning.
        held.reported = true
        self.held = nil
        let beginning = Array(held.bytes.prefix(held.limit))
        held.bytes.withUnsafeBytes { route($0, owner: owner) }
        owner.holding.stage?.requestBodyHeld(beginning, complete: false, exchange: owner)
        return true
    }

    /// The client's body ended while held for it: the stage sees all of it.
    private func heldBodyEnded(owner: Owner) {
        guard let held, !held.reported else { return }
        held.reported = true
        owner.holding.stage?.requestBodyHeld(held.bytes, complete: true, exchange: owner)
    }

    /// The hold is over: the body read while held goes on toward the upstream (the attempt, when
    /// it starts, takes it with the rest).
    func releaseHeld(owner: Owner) {
        guard let held else { return }
        self.held = nil
        if !held.bytes.isEmpty { held.bytes.withUnsafeBytes { route($0, owner: owner) } }
    }

    /// Whether the holding stage has seen the whole body (an edit may then replace it).
    var heldWhole: Bool { held?.reported == true && ended }

    /// A holding stage's edit replaced the body: `body` goes upstream instead of the client's,
    /// which is read and dropped.
    func replaceBody(with body: [UInt8]) {
        let replacement = held ?? HeldRequestBody(limit: body.count)
        replacement.bytes = body
        replacement.reported = true
        held = replacement
        upload.replaced()
    }

    /// The exchange ended: nothing more goes upstream, and a held body is let go.
    func stop() {
        held = nil
        upload.stop()
    }
}
