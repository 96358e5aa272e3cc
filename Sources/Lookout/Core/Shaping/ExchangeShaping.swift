import LookoutIO
import LookoutModel

/// What a shaping rule needs of one exchange or tunnel while it runs: the latency drawn, the
/// pacers of both directions (or, for an exchange's response, the writer that paces, stalls or
/// cuts it), and where they stand. Exchanges (through the shaping stage) and `CONNECT` tunnels
/// make it the same way, so both are shaped by this code. Made only for a host with a rule, so
/// an exchange or tunnel without one carries a single empty reference.
package final class ExchangeShaping {  // confined to the exchange's (or tunnel's) loop queue
    let rule: ShapingRule
    /// This exchange's latency (seconds) and what the record says was applied.
    package let latency: Double
    package let applied: ShapingSummary
    /// Paces, stalls or cuts an exchange's response (its client writer is it, then).
    var response: ShapedResponseWriter?
    /// Paces bytes toward the origin (`upload_kbps`): an exchange's request body, a tunnel's client bytes.
    var upload: PacedSender?
    /// Paces a tunnel's bytes toward the client (`download_kbps`).
    var download: PacedSender?
    /// The client's body ended while the upload pacer still held bytes: the end follows them.
    var requestEndWaits = false
    /// `faults.reset_after_bytes` was applied.
    var resetInjected = false

    /// The rule applied to one exchange or tunnel: its latency drawn once.
    init(rule: ShapingRule) {
        self.rule = rule
        latency = rule.drawLatency()
        applied = rule.applied(latency: latency)
    }

    /// The request body's bytes wait in the pacer, or its end waits behind them.
    var holdsRequestBody: Bool {
        requestEndWaits || (upload?.isHolding ?? false)
    }

    /// A pacer at `kbps` (nil for no limit) that hands bytes to `sink` and calls `ready` when it
    /// can take more.
    static func pacer(kbps: Double, bytesPerSecond: Double, loop: EventLoop,
                      sink: @escaping (UnsafeRawBufferPointer) -> Bool, ready: @escaping () -> Void) -> PacedSender? {
        guard kbps > 0 else { return nil }
        let pacer = PacedSender(loop: loop, bytesPerSecond: bytesPerSecond, sink: sink)
        pacer.onReady = ready
        return pacer
    }

    /// Both directions of a tunnel paced as the rule says (an exchange that became a tunnel
    /// drops the pacer of its request body, which has ended).
    func paceTunnel(loop: EventLoop, toClient: @escaping (UnsafeRawBufferPointer) -> Bool, clientReady: @escaping () -> Void,
                    toUpstream: @escaping (UnsafeRawBufferPointer) -> Bool, upstreamReady: @escaping () -> Void) {
        upload?.cancel()
        download = Self.pacer(kbps: rule.downloadKbps, bytesPerSecond: rule.downloadBytesPerSecond, loop: loop,
                              sink: toClient, ready: clientReady)
        upload = Self.pacer(kbps: rule.uploadKbps, bytesPerSecond: rule.uploadBytesPerSecond, loop: loop,
                            sink: toUpstream, ready: upstreamReady)
    }

    /// Stops both pacers (the exchange or tunnel is over).
    func cancelPacing() {
        upload?.cancel()
        download?.cancel()
    }

    /// An injected fault's record and its name in the summary's `shaping.faults`.
    package static func record(_ fault: RequestDidInjectFault.Fault, rule: ShapingRule?, exchange: StageContext) {
        exchange.record(.fault(fault.name))
        exchange.emit(RequestDidInjectFault(rule: rule?.name ?? "", fault: fault))
    }
}
