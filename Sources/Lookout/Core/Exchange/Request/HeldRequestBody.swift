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
