import LookoutModel
import LookoutTLS

/// A transparent or SOCKS5 connection before its bytes are HTTP requests, a TLS session or a
/// tunnel's: the SOCKS5 handshake, then the first bytes the client sends. A class: every client
/// connection has the slot and few ever fill it, so an idle connection holds a pointer.
final class CaptureState: @unchecked Sendable {  // used on the client connection's `loop.queue` only
    enum Phase {
        case socksGreeting, socksCredentials, socksRequest
        /// Waiting for the client's first bytes to tell what it speaks.
        case sniffing
        /// Plain HTTP: the requests go to `target`, each named by its Host.
        case plain
    }

    var phase: Phase
    /// Set once known: the original destination, or the SOCKS5 request's.
    var target: CaptureTarget?
    /// What arrived and was not used yet.
    var bytes: [UInt8] = []
    var gatherer = FirstRecordGatherer()
    let start = Instant.now()

    init(phase: Phase) {
        self.phase = phase
    }

    /// Whether reads come here rather than to the request parser.
    var isWaiting: Bool { phase != .plain }
}
