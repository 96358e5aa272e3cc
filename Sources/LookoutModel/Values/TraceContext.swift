import Synchronization

/// The W3C Trace Context of one exchange (https://www.w3.org/TR/trace-context/): the trace it
/// belongs to, Lookout's span for it, the client's span when the client sent a `traceparent`, and
/// whether it is sampled. Attempt spans are derived from the exchange's span, so the header sent
/// upstream and the exported span agree without storing either.
public struct TraceContext: Sendable, Equatable {
    public var traceIDHigh: UInt64
    public var traceIDLow: UInt64
    /// Lookout's span for the exchange (kind SERVER).
    public var spanID: UInt64
    /// The client's span (`traceparent`'s parent-id), when one came.
    public var parentSpanID: UInt64?
    public var sampled: Bool
    /// The client's `tracestate`, passed on as it came.
    public var traceState: String?

    public init(traceIDHigh: UInt64, traceIDLow: UInt64, spanID: UInt64, parentSpanID: UInt64? = nil, sampled: Bool,
                traceState: String? = nil) {
        self.traceIDHigh = traceIDHigh
        self.traceIDLow = traceIDLow
        self.spanID = spanID
        self.parentSpanID = parentSpanID
        self.sampled = sampled
        self.traceState = traceState
    }

    /// A new trace, or the client's continued: `parent` is its parsed `traceparent`.
    public static func start(parent: (traceHigh: UInt64, traceLow: UInt64, span: UInt64, sampled: Bool)?,
                             traceState: String?, sampleRatio: Double) -> TraceContext {
        var generator = TraceIDGenerator()
        let span = nonZero(&generator)
        if let parent {
            // Parent-based sampling: the client's decision stands.
            return TraceContext(traceIDHigh: parent.traceHigh, traceIDLow: parent.traceLow, spanID: span,
                                parentSpanID: parent.span, sampled: parent.sampled, traceState: traceState)
        }
        let low = nonZero(&generator)
        // TraceIdRatioBased: the low 64 bits of the id below ratio × 2^64 (OpenTelemetry's sampler).
        let sampled = sampleRatio >= 1 || (sampleRatio > 0 && Double(low >> 1) < sampleRatio * Double(UInt64.max >> 1))
        return TraceContext(traceIDHigh: generator.next(), traceIDLow: low, spanID: span, sampled: sampled)
    }

    private static func nonZero(_ generator: inout TraceIDGenerator) -> UInt64 {
        while true {
            let value: UInt64 = generator.next()
            if value != 0 { return value }
        }
    }

    /// The span of upstream attempt `attempt` (1, 2, …): a SplitMix64 step from the exchange's span.
    public func attemptSpanID(_ attempt: Int) -> UInt64 {
        var z = spanID &+ UInt64(attempt) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return z == 0 ? 1 : z
    }

    /// The trace id as 32 lowercase hex digits.
    public var traceIDHex: String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            Self.writeHex(traceIDHigh, into: buffer, at: 0)
            Self.writeHex(traceIDLow, into: buffer, at: 16)
            return 32
        }
    }

    /// `traceparent` naming attempt `attempt`'s span (version 00): made for every attempt, so
    /// written byte by byte into one string.
    public func traceparent(attempt: Int) -> String {
        String(unsafeUninitializedCapacity: 55) { buffer in
            buffer[0] = UInt8(ascii: "0")
            buffer[1] = UInt8(ascii: "0")
            buffer[2] = UInt8(ascii: "-")
            Self.writeHex(traceIDHigh, into: buffer, at: 3)
            Self.writeHex(traceIDLow, into: buffer, at: 19)
            buffer[35] = UInt8(ascii: "-")
            Self.writeHex(attemptSpanID(attempt), into: buffer, at: 36)
            buffer[52] = UInt8(ascii: "-")
            buffer[53] = UInt8(ascii: "0")
            buffer[54] = UInt8(ascii: sampled ? "1" : "0")
            return 55
        }
    }

    public static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            writeHex(value, into: buffer, at: 0)
            return 16
        }
    }

    /// 16 lowercase hex digits of `value` at `offset`.
    private static func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { table in
            for index in 0..<16 { buffer[offset + index] = table[Int((value >> UInt64(60 - 4 * index)) & 0xf)] }
        }
    }

    /// A `traceparent` value's trace id, parent id and sampled flag; nil when it is not valid
    /// (Trace Context §3.2: version 00 form; an unknown higher version is read by its first four
    /// fields; all-zero ids and version ff are invalid).
    public static func parse(traceparent value: String) -> (traceHigh: UInt64, traceLow: UInt64, span: UInt64, sampled: Bool)? {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
              parts[0] != "ff", parts[0] == "00" ? parts.count == 4 : true,
              parts.prefix(4).allSatisfy({ $0.allSatisfy { $0.isHexDigit && !$0.isUppercase } }),
              let high = UInt64(parts[1].prefix(16), radix: 16), let low = UInt64(parts[1].suffix(16), radix: 16),
              let span = UInt64(parts[2], radix: 16), let flags = UInt8(parts[3], radix: 16),
              high != 0 || low != 0, span != 0 else { return nil }
        return (high, low, span, flags & 1 == 1)
    }
}

/// Trace and span ids: SplitMix64 over a counter shared by every thread, from a seed read once
/// from the system's generator — an atomic add per id instead of a `getrandom` call on the
/// exchange's path. Unique and uniformly spread, as W3C Trace Context asks of ids (§3.2.2.3).
struct TraceIDGenerator: RandomNumberGenerator {
    private static let seed: UInt64 = {
        var system = SystemRandomNumberGenerator()
        return system.next()
    }()
    private static let counter = Atomic<UInt64>(0)

    mutating func next() -> UInt64 {
        var z = Self.seed &+ Self.counter.add(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
