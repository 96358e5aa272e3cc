import LookoutAdmin
import LookoutModel
import LookoutSync

/// Where a `PacedStream` takes its body from, one piece at a time.
protocol PacedSource: Sendable {
    /// The next piece; nil once the body is complete.
    mutating func next() -> [UInt8]?
    /// Releases what the source holds (a file); called once, when the stream stops.
    mutating func close()
}

/// A streamed admin body made piece by piece (a captured file, a HAR document): a piece is made
/// only once the sink took the one before, so never more than the sink's bound waits for a slow
/// client, and nothing is built whole.
final class PacedStream<Source: PacedSource>: AdminStreamProducer, @unchecked Sendable {  // `state` under its lock
    private struct State {
        var source: Source
        var sink: AdminStreamSink?
        var stopped = false
        /// Made but not yet taken by the sink.
        var pending: [UInt8]?
    }

    private let state: Guarded<State>

    init(_ source: Source) {
        state = Guarded(State(source: source))
    }

    func start(_ sink: AdminStreamSink) {
        state.withLock { $0.sink = sink }
        pump()
    }

    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            state.sink = nil
            state.pending = nil
            state.source.close()
        }
    }

    /// Sends until the sink is full (then again once it drains) or the body is complete.
    private func pump() {
        while true {
            let step: (sink: AdminStreamSink, piece: [UInt8]?)? = state.withLock { state in
                guard let sink = state.sink else { return nil }
                if state.pending == nil { state.pending = state.source.next() }
                return (sink, state.pending)
            }
            guard let step else { return }
            guard let piece = step.piece else {
                step.sink.finish()
                stop()
                return
            }
            guard step.sink.send(piece) else {
                if step.sink.hasEnded {
                    stop()
                } else {
                    step.sink.whenDrained { [self] in pump() }
                }
                return
            }
            state.withLock { $0.pending = nil }
        }
    }
}
