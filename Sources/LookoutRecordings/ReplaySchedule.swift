/// The order a replay sends a recording's requests in.
///
/// Under `.recorded` it keeps the recording's causal order: a request starts only after every
/// request that had ended before it started in the recording has been answered again. So the
/// requests of one client connection go one after another, each after the previous response, and
/// requests whose recorded lifetimes overlapped (HTTP/2 streams, parallel connections) may run
/// together as they did. Under `.none` nothing waits; requests go in their recorded order of start.
/// Either way the caller caps how many are in flight.
///
/// A request's prerequisites are those that ended at or before its start: sorted by end, they form
/// a prefix of that order whose length grows with the start time. So a request is ready when the
/// completed prefix of the end-sorted order is at least that long, and the requests become ready in
/// their order of start: the schedule is a queue, not a graph.
public struct ReplaySchedule: Sendable {
    public enum Order: String, Sendable, CaseIterable {
        case recorded
        case none
    }

    /// Positions in the recording, in the order they are sent.
    public let sendingOrder: [Int]
    /// For each position, how many requests (by end) must be answered before it starts.
    private let needed: [Int]
    /// Each position's place in the end-sorted order.
    private let rankByEnd: [Int]
    private var answered: [Bool]
    /// The length of the end-sorted prefix answered whole.
    private var answeredPrefix = 0

    /// The schedule of `exchanges`; throws for a recording that cannot be ordered: an entry with no
    /// start time, or HTTP/1.x entries that overlap on one connection.
    public init(_ exchanges: [RecordedExchange], order: Order) throws(RecordingError) {
        for exchange in exchanges where exchange.startMicroseconds == nil || exchange.endMicroseconds == nil {
            throw RecordingError(file: exchange.file, entry: exchange.index,
                                 message: "has no start time (\(exchange.method) \(exchange.url)), so its order cannot be kept")
        }
        let start = exchanges.map { $0.startMicroseconds! }, end = exchanges.map { max($0.endMicroseconds!, $0.startMicroseconds!) }
        let byStart = exchanges.indices.sorted { (start[$0], $0) < (start[$1], $1) }
        try Self.checkConnections(exchanges, byStart: byStart, start: start, end: end)
        let byEnd = exchanges.indices.sorted { (end[$0], $0) < (end[$1], $1) }
        var rank = [Int](repeating: 0, count: exchanges.count)
        for (place, position) in byEnd.enumerated() { rank[position] = place }
        var needed = [Int](repeating: 0, count: exchanges.count)
        if order == .recorded {
            // Walk starts in order with a pointer into the ends: each needs every end at or before it.
            var pointer = 0
            for position in byStart {
                while pointer < byEnd.count, end[byEnd[pointer]] <= start[position] { pointer += 1 }
                needed[position] = pointer
            }
        }
        sendingOrder = byStart
        self.needed = needed
        rankByEnd = rank
        answered = [Bool](repeating: false, count: exchanges.count)
    }

    /// HTTP/1.x carries one exchange at a time: two overlapping on one connection mean the
    /// recording's times or connection ids are wrong, and its order cannot be trusted. (HTTP/2 and
    /// HTTP/3 streams overlap by design; a HAR `connection` that is only the server's port, as
    /// Firefox writes it, is no connection id: `RecordingReader` drops it.)
    private static func checkConnections(_ exchanges: [RecordedExchange], byStart: [Int], start: [Int64],
                                         end: [Int64]) throws(RecordingError) {
        var lastOnConnection: [String: Int] = [:]
        for position in byStart {
            guard let connection = exchanges[position].connection, !exchanges[position].isHTTP2 else { continue }
            if let previous = lastOnConnection[connection], end[previous] > start[position], !exchanges[previous].isHTTP2 {
                let earlier = exchanges[previous]
                throw RecordingError(file: exchanges[position].file, entry: exchanges[position].index,
                                     message: "overlaps entry \(earlier.index) on connection \(connection), which carries one HTTP/1.x exchange at a time")
            }
            lastOnConnection[connection] = position
        }
    }

    /// Whether the request at `position` may be sent now.
    public func isReady(_ position: Int) -> Bool {
        needed[position] <= answeredPrefix
    }

    /// Records that the request at `position` was answered.
    public mutating func answer(_ position: Int) {
        answered[rankByEnd[position]] = true
        while answeredPrefix < answered.count, answered[answeredPrefix] { answeredPrefix += 1 }
    }
}
