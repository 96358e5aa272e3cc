/// Percentiles of durations with bounded memory: values are counted in log-linear buckets of
/// microseconds (exact below 1,024 µs, then 512 buckets per power of two: within 0.2 %).
public struct PhaseHistogram: Sendable {
    private var counts: [Int: Int] = [:]
    public private(set) var count = 0

    public init() {}

    public mutating func add(milliseconds: Double) {
        guard milliseconds >= 0 else { return }
        counts[Self.bucket(Int64((milliseconds * 1000).rounded())), default: 0] += 1
        count += 1
    }

    /// The value at percentile `p` (0–100, nearest rank), in milliseconds; nil when empty.
    public func percentile(_ p: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = max(1, Int((p / 100 * Double(count)).rounded(.up)))
        var seen = 0
        for bucket in counts.keys.sorted() {
            seen += counts[bucket]!
            if seen >= rank { return Double(Self.lowerBound(bucket)) / 1000 }
        }
        return nil
    }

    static func bucket(_ micros: Int64) -> Int {
        if micros < 1024 { return Int(max(0, micros)) }
        let exponent = 63 - micros.leadingZeroBitCount - 9   // micros >> exponent is in 512..<1024
        return 1024 + (exponent - 1) * 512 + Int((micros >> exponent) - 512)
    }

    static func lowerBound(_ bucket: Int) -> Int64 {
        if bucket < 1024 { return Int64(bucket) }
        let exponent = (bucket - 1024) / 512 + 1
        return Int64((bucket - 1024) % 512 + 512) << exponent
    }
}
