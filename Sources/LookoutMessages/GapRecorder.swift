/// The gaps between consecutive events, for their quantiles: at most `capacity` kept — when full,
/// every second one is dropped and only every second one after is kept, so the sample still spans
/// the whole stream — and the largest exactly.
struct GapRecorder {
    private(set) var gaps: [Double] = []
    private var stride = 1
    private var seen = 0
    private(set) var largest = 0.0
    private var last: Double?
    static let capacity = 8192

    /// An event at `milliseconds`.
    mutating func event(at milliseconds: Double) {
        defer { last = milliseconds }
        guard let last else { return }
        let gap = milliseconds - last
        largest = Swift.max(largest, gap)
        seen += 1
        guard seen % stride == 0 else { return }
        if gaps.count == Self.capacity {
            gaps = gaps.enumerated().compactMap { $0.offset % 2 == 0 ? $0.element : nil }
            stride *= 2
        }
        gaps.append(gap)
    }

    /// p50, p99 (nearest rank) and the largest; nil with no gap yet.
    var quantiles: (p50: Double, p99: Double, max: Double)? {
        guard !gaps.isEmpty else { return nil }
        let sorted = gaps.sorted()
        func rank(_ q: Double) -> Double { sorted[Swift.min(sorted.count - 1, Int((q * Double(sorted.count)).rounded(.up)) - 1)] }
        return (rank(0.5), rank(0.99), largest)
    }
}
