import LookoutHTTP

/// What a stage holds of its exchange (`StageVerdict.hold`, `ResponseVerdict.hold`): the holding
/// stage, the response head it holds, the request body it reads while it holds the request, and
/// the head as the client sent it once a holding stage edited it. The request head's pass through
/// the stages stops only at a hold, so where it stands is kept here too.
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
    /// The request body a stage holding the request head reads (`holdWithBody`).
    var requestBody: HeldRequestBody?
    /// The head as the client sent it, kept once a stage edits the exchange's (a resend sends this).
    var clientHead: RequestHead?
}

/// The request body a stage holds with the request head (`holdWithBody`).
final class HeldRequestBody {  // confined to the exchange's loop queue
    let limit: Int
    var bytes: [UInt8] = []
    /// The holding stage was told (the body ended, or went past `limit`).
    var reported = false

    init(limit: Int) {
        self.limit = limit
    }
}
