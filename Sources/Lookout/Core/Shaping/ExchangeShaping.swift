/// What a shaping rule needs of one exchange while it runs: the response writer that paces, stalls
/// or cuts the response, the pacer of the request body, and where the two stand. Made by
/// `StageContext.shape` only for an exchange whose host has a rule, so an exchange without one
/// carries a single empty reference.
final class ExchangeShaping {  // confined to the exchange's loop queue
    let rule: ShapingRule
    /// Paces, stalls or cuts the response (the exchange's client writer is it, then).
    var response: ShapedResponseWriter?
    /// Paces the request body toward the origin (`upload_kbps`).
    var upload: PacedSender?
    /// The client's body ended while the upload pacer still held bytes: the end follows them.
    var requestEndWaits = false
    /// `faults.reset_after_bytes` was applied.
    var resetInjected = false

    init(rule: ShapingRule) {
        self.rule = rule
    }

    /// The request body's bytes wait in the pacer, or its end waits behind them.
    var holdsRequestBody: Bool {
        requestEndWaits || (upload?.isHolding ?? false)
    }
}
