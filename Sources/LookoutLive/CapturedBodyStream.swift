#if canImport(Glibc)
import Glibc
#endif
import Lookout
import Synchronization

/// Sends a captured body file to an admin client in 64 KiB reads, never more than the sink's
/// bound ahead of the client: a read waits for the client to drain the last one.
final class CapturedBodyStream: AdminStreamProducer, @unchecked Sendable {  // `state` under its lock
    private struct State {
        var fd: Int32
        var sink: AdminStreamSink?
        /// Read but not yet taken by the sink.
        var pending: [UInt8]?
        var remaining: UInt64
    }

    private let state: Mutex<State>
    static let chunkBytes = 64 * 1024

    /// `fd` is open for reading and positioned at the start; `length` bytes are sent.
    init(fd: Int32, length: UInt64) {
        state = Mutex(State(fd: fd, remaining: length))
    }

    func start(_ sink: AdminStreamSink) {
        state.withLock { $0.sink = sink }
        pump()
    }

    func stop() {
        state.withLock { state in
            if state.fd >= 0 { close(state.fd) }
            state.fd = -1
            state.sink = nil
        }
    }

    /// Sends until the sink is full (then again once it drains) or the file is done.
    private func pump() {
        while true {
            let step: (sink: AdminStreamSink, chunk: [UInt8])? = state.withLock { state in
                guard let sink = state.sink, state.fd >= 0 else { return nil }
                if let pending = state.pending { return (sink, pending) }
                guard state.remaining > 0 else { return (sink, []) }
                var chunk = [UInt8](repeating: 0, count: Int(min(UInt64(Self.chunkBytes), state.remaining)))
                let n = chunk.withUnsafeMutableBytes { read(state.fd, $0.baseAddress, $0.count) }
                // A file cut short since its length was taken ends the body early: the
                // Content-Length then tells the client it is incomplete.
                guard n > 0 else {
                    state.remaining = 0
                    return (sink, [])
                }
                chunk.removeLast(chunk.count - n)
                state.remaining -= UInt64(n)
                state.pending = chunk
                return (sink, chunk)
            }
            guard let step else { return }
            if step.chunk.isEmpty {
                step.sink.finish()
                stop()
                return
            }
            guard step.sink.send(step.chunk) else {
                if step.sink.hasEnded { stop(); return }
                step.sink.whenDrained { [self] in pump() }
                return
            }
            state.withLock { $0.pending = nil }
        }
    }
}
