import LookoutModel

/// What an admin page may ask of the running exchanges: list them, or cancel one. The session
/// answers; pages get it through `AdminRequest.exchanges`, never the session itself.
public protocol ExchangeOperator: AnyObject, Sendable {
    /// Every exchange and tunnel running now, in no particular order; `completion` runs once, on
    /// any thread, and must be short.
    func inFlightExchanges(completion: @escaping @Sendable ([InFlightExchange]) -> Void)
    /// Cancels the running exchange or tunnel `id` on behalf of `operatorAddress`; `completion`
    /// says whether one was found.
    func cancelExchange(id: UInt64, operatorAddress: String, completion: @escaping @Sendable (Bool) -> Void)
}
