import LookoutHTTP

/// What a stage holds of its exchange (`StageVerdict.hold`, `ResponseVerdict.hold`): the holding
/// stage, the response head it holds, and the head as the client sent it once a holding stage
/// edited it (the request body it reads is the request's: `ClientRequest`). The request head's
/// pass through the stages stops only at a hold, so where it stands is kept here too.
struct StageHold {
    /// The next stage the request head goes to.
    var nextRequestStage = 0
    /// The holding stage, while one holds the exchange.
    var stage: (any ExchangeStage)?
    /// Counts holds, so that a deadline timer knows whether its hold is still the current one.
    var generation: UInt64 = 0
    /// The response head a stage holds; kept after the stage lets go until it goes on, on a
    /// later turn of the loop.
    var response: HeldResponse?
    /// The head as the client sent it, kept once a stage edits the exchange's (a resend sends this).
    var clientHead: RequestHead?
}
