/// The name of a stored object: a 128-bit hash of its key, as 32 hex digits on disk.
///
/// Two FNV-1a 64-bit hashes with different offset bases; the object's own metadata repeats the
/// full key, which is compared on every open, so a collision can only miss, never serve the wrong
/// object.
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(key: String) {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x6c62_272e_07bb_0142
        for byte in key.utf8 {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            b = (b ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        high = a
        low = b ^ (a >> 29)
    }

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses the 32 hex digits of a file name.
    init?(hex: Substring) {
        guard hex.utf8.count == 32, let high = UInt64(hex.prefix(16), radix: 16),
              let low = UInt64(hex.suffix(16), radix: 16) else { return nil }
        self.init(high: high, low: low)
    }

    public var description: String { Self.hex(high) + Self.hex(low) }

    /// The directory fan-out: 256 folders named by the first two digits.
    var folder: String { String(description.prefix(2)) }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
