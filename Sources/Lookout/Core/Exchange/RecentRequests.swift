import LookoutHTTP
import LookoutModel

/// The requests of one loop's most recent finished exchanges, as their clients sent them, for
/// `POST /exchanges/ID/resend`: heads in memory (credentials included — the log's copies are
/// redacted), bodies in their capture files. A fixed ring: the oldest is forgotten first.
final class RecentRequests: @unchecked Sendable {  // confined to the loop's queue
    struct Entry {
        let id: UInt64
        let head: RequestHead
        /// The absolute URL the client asked for.
        let url: String
        let kind: ExchangeSummary.Kind
        /// Where the request body was captured, and how long the body the client sent was.
        let capturePath: String?
        let bodyBytes: UInt64
    }

    static let capacity = 256
    private var ring: [Entry?] = Array(repeating: nil, count: capacity)
    private var next = 0

    func add(_ entry: Entry) {
        ring[next] = entry
        next = (next + 1) % Self.capacity
    }

    func entry(id: UInt64) -> Entry? {
        ring.first { $0?.id == id } ?? nil
    }
}
