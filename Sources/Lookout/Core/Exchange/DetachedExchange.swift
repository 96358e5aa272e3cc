/// The delegate of an exchange no client connection owns (a background revalidation, a resend):
/// it keeps itself and its exchange alive until the exchange ends, then lets both go on the next
/// turn of the loop (the exchange is still on the stack that told it).
class DetachedExchange: ExchangeDelegate, @unchecked Sendable {  // confined to the exchange's loop queue
    private(set) var exchange: Exchange?
    /// Nobody else holds it: it holds itself until the exchange ends.
    private var keptAlive: DetachedExchange?

    /// Holds `exchange` (which holds this delegate unowned) until it ends.
    func keep(_ exchange: Exchange) {
        self.exchange = exchange
        keptAlive = self
    }

    /// The exchange ended; called once, before both are let go.
    func exchangeEnded() {}

    func exchangeCanTakeInput() {}
    func exchangeDidFinish(keepAlive: Bool) { end() }
    func exchangeDidBreakOff() { end() }
    func exchangeDidSwitchProtocols(to tunnel: Tunnel) { end() }
    func tunnelDidFinish(upstreamFailed: Bool) {}
    var isClosingAfterExchange: Bool { true }

    private func end() {
        guard let exchange else { return }
        exchangeEnded()
        let kept = keptAlive
        self.exchange = nil
        keptAlive = nil
        exchange.context.loop.execute { _ = (exchange, kept) }
    }
}
