import HTTPTypes
import LookoutUpstream

/// A request body's way upstream: the bytes that came before the attempt could take them, the
/// copy kept for another attempt (retry rules, followed 307/308), the end and its trailers, and
/// backpressure toward the client. Made only for a request that has a body; the exchange feeds it
/// the client's bytes and tells it about each attempt, and it answers whether the client may be
/// read again (the exchange asks for that on a later turn of the loop).
final class RequestBodyRelay {  // confined to the exchange's loop queue
    /// One read's worth: past this many waiting bytes the client is not read until they went on.
    static let window = 64 * 1024

    /// The client's body is complete.
    private(set) var ended = false
    /// The client's trailers (RFC 9110 §6.5), when it sent some.
    private var trailers: HTTPFields?
    /// The upstream (or the copy kept for another attempt) is backed up: the client is not read.
    private(set) var pausedForUpstream = false
    /// Bytes that came before the attempt could take them (it is connecting, or a stage holds
    /// the exchange), at most about one window.
    private var early: [UInt8] = []
    /// Body bytes the client sent so far.
    private(set) var received: UInt64 = 0
    /// The current attempt sent its head and takes body bytes.
    private var attemptTakes = false
    /// The body kept for another attempt, when a rule may need it.
    private var replay: ReplayableBody?
    /// How much of `replay` the current attempt has been sent.
    private var replaySent: UInt64 = 0
    /// Nothing goes upstream any more (a followed redirect turned the request into a bodiless
    /// GET, or a stage answers): the rest of the body is read and dropped.
    private(set) var dropped = false

    init(keeping replay: ReplayableBody?) {
        self.replay = replay
    }

    /// Whether another attempt can send the body again (it was kept whole so far).
    var isReplayable: Bool { replay.map { !$0.isOverLimit } ?? false }

    /// Keeps the body for another attempt (or not) from here on: only before any of it was read.
    func keep(_ replay: ReplayableBody?) {
        guard received == 0 else { return }
        self.replay = replay
    }

    /// Counts the client's bytes; the total so far.
    func count(_ bytes: Int) -> UInt64 {
        received += UInt64(bytes)
        return received
    }

    /// A new attempt starts: it takes the body from its beginning once its head went out.
    func attemptStarts() {
        attemptTakes = false
        replaySent = 0
    }

    /// The attempt's head is on its way: it gets what is waiting. True when the client may be read.
    func attemptIsReady(_ task: UpstreamTask) -> Bool {
        attemptTakes = true
        let wasPaused = pausedForUpstream
        let resumed = feed(task)
        return resumed || (!ended && !pausedForUpstream && !wasPaused && !dropped)
    }

    /// Bytes toward the upstream: the copy kept for another attempt, the running attempt, or the
    /// bounded buffer while the upstream is not ready. True when the client may be read again.
    func route(_ bytes: UnsafeRawBufferPointer, to task: UpstreamTask?) -> Bool {
        guard !dropped else { return false }
        if let replay {
            // An attempt that has had everything stored takes the live bytes; the store keeps its
            // copy for a later attempt without reading it back now.
            let caughtUp = attemptTakes && replaySent == replay.count && early.isEmpty
            if replay.append(bytes) {
                if caughtUp, let task {
                    replaySent = replay.count
                    if !task.sendBody(bytes) { pausedForUpstream = true }
                    return false
                }
                let resumed = feed(task)
                if replay.count - replaySent >= UInt64(Self.window) { pausedForUpstream = true }
                return resumed
            }
        }
        if attemptTakes, let task, early.isEmpty, replay == nil {
            if !task.sendBody(bytes) { pausedForUpstream = true }
            return false
        }
        // The upstream is still connecting, a stage holds the exchange, or stored bytes go first:
        // hold one read's worth, then stop reading.
        early.append(contentsOf: bytes)
        if early.count >= Self.window { pausedForUpstream = true }
        return feed(task)
    }

    /// The client's body ended (the attempt hears of it at the next `feed`).
    func end(trailers: HTTPFields?) {
        ended = true
        self.trailers = trailers
    }

    /// Sends the attempt what it has not had yet: kept bytes first, then what waited, then the
    /// end of the body. True when the upstream had been backed up and took everything now (the
    /// client may be read again).
    func feed(_ task: UpstreamTask?) -> Bool {
        guard attemptTakes, let task else { return false }
        if dropped {
            // The hop is a bodiless GET now: its request is complete, whatever the client still sends.
            task.finishBody(trailers: nil)
            return false
        }
        if let replay {
            while replaySent < replay.count {
                var accepted = true
                let sent = replay.read(from: replaySent, maximum: Self.window) { accepted = task.sendBody($0) }
                guard sent > 0 else { break }
                replaySent += UInt64(sent)
                if !accepted {
                    pausedForUpstream = true
                    return false
                }
            }
            // Past its limit the body can no longer be sent again: stream the rest.
            if replay.isOverLimit { self.replay = nil }
        }
        if !early.isEmpty {
            let body = early
            early = []
            if !body.withUnsafeBytes({ task.sendBody($0) }) {
                pausedForUpstream = true
                return false
            }
        }
        if ended { task.finishBody(trailers: trailers) }
        return unpause()
    }

    /// Lets a paused client be read again (its bytes go to a stage's hold, or are dropped).
    /// True when it had been paused.
    func unpause() -> Bool {
        guard pausedForUpstream else { return false }
        pausedForUpstream = false
        return true
    }

    /// Nothing goes upstream any more. True when the client may be read again.
    func drop() -> Bool {
        guard !dropped else { return false }
        dropped = true
        replay = nil
        early = []
        return unpause()
    }

    /// A stage replaced the body whole (`editRequest`): it is complete, and has no trailers.
    func replaced() {
        ended = true
        trailers = nil
    }

    /// The exchange is over: the kept copy goes (its file is unlinked already).
    func stop() {
        replay = nil
    }
}
