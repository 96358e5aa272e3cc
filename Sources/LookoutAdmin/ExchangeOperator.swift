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

/// What an admin page may do with breakpoints, the exchanges they hold, and finished exchanges
/// sent again. The session answers, as for `ExchangeOperator`.
public protocol BreakpointOperator: AnyObject, Sendable {
    /// Every exchange a breakpoint holds now, oldest first.
    var heldExchanges: [HeldExchange] { get }
    func heldExchange(id: UInt64) -> HeldExchange?
    /// Resumes (with edits), aborts or answers held exchange `id`; `completion` runs once, on any
    /// thread. An edit that cannot be applied leaves the exchange held (`.invalid`).
    func act(onHeld id: UInt64, _ action: OperatorAction, operatorAddress: String,
             completion: @escaping @Sendable (OperatorOutcome) -> Void)
    /// The breakpoints now, with their numbers.
    var breakpointRules: [(id: Int, spec: BreakpointRuleSpec)] { get }
    /// Adds a breakpoint: its number, or what is wrong with it.
    func addBreakpoint(_ spec: BreakpointRuleSpec) -> Result<Int, BreakpointRejection>
    func removeBreakpoint(id: Int) -> Bool
    /// Sends finished exchange `id`'s request again, with `edits`, as a new exchange; `completion`
    /// gets the new exchange's id, or why it cannot be sent.
    func resend(id: UInt64, edits: ExchangeEdits, operatorAddress: String,
                completion: @escaping @Sendable (Result<UInt64, ResendRefusal>) -> Void)
}

/// Why a breakpoint was not added (the message names the field).
public struct BreakpointRejection: Error, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// Why an exchange cannot be sent again.
public struct ResendRefusal: Error, Sendable {
    /// 404: not among the recent exchanges; 409: its body is not there to send; 400: a bad edit.
    public let status: Int
    public let message: String
    public init(status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}
