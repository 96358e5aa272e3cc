/// A hand-written JSON encoder that appends to a reusable byte buffer.
///
/// Objects and arrays are built with `beginObject`/`key`/`endObject` and
/// `beginArray`/`element`/`endArray`; commas are inserted automatically. Keys are static ASCII
/// (they are ours and need no escaping); dynamic keys (header names) go through `key(dynamic:)`.
/// Strings are escaped per RFC 8259; valid UTF-8 (every Swift `String`) passes through unchanged.
struct JSONBuffer {
    var bytes: [UInt8] = []
    /// True right after `{` or `[`: the next member needs no comma.
    private var atStart = true

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        atStart = true
    }

    // MARK: Structure

    mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        atStart = true
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        atStart = false
    }

    mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        atStart = true
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        atStart = false
    }

    /// Starts an array element (writes the separating comma if needed).
    mutating func element() {
        if !atStart { bytes.append(UInt8(ascii: ",")) }
        atStart = false
    }

    /// Writes `"name":` (with a leading comma when needed). `name` must not need escaping.
    mutating func key(_ name: StaticString) {
        if !atStart { bytes.append(UInt8(ascii: ",")) }
        atStart = false
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// Writes an escaped dynamic key.
    mutating func key(dynamic name: String) {
        if !atStart { bytes.append(UInt8(ascii: ",")) }
        atStart = false
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Appends a newline; the buffer is then ready for the next record.
    mutating func endLine() {
        bytes.append(UInt8(ascii: "\n"))
        atStart = true
    }

    // MARK: Scalars

    mutating func bool(_ value: Bool) {
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])  // true
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])  // false
        }
    }

    mutating func int<T: BinaryInteger>(_ value: T) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            // magnitude of the most negative Int64 still fits in UInt64
            uint(UInt64(value.magnitude))
        } else {
            uint(UInt64(value))
        }
    }

    mutating func uint(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var v = value
            var i = 20
            while v > 0 {
                i -= 1
                digits[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
                v /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i..<20]))
        }
    }

    /// A duration in milliseconds rounded to 3 decimals, without exponent and without trailing
    /// zeros (`1.4`, `0.05`, `12`); non-finite or absurd values are written as `-1`.
    mutating func milliseconds(_ value: Double) {
        guard value.isFinite else {
            bytes.append(contentsOf: [UInt8(ascii: "-"), UInt8(ascii: "1")])
            return
        }
        let scaled = (value * 1000).rounded()
        guard scaled.magnitude < 9.0e18 else {
            bytes.append(contentsOf: [UInt8(ascii: "-"), UInt8(ascii: "1")])
            return
        }
        var n = Int64(scaled)
        if n < 0 {
            bytes.append(UInt8(ascii: "-"))
            n = -n
        }
        uint(UInt64(n / 1000))
        let frac = Int(n % 1000)
        if frac != 0 {
            bytes.append(UInt8(ascii: "."))
            let d1 = frac / 100, d2 = frac / 10 % 10, d3 = frac % 10
            bytes.append(UInt8(ascii: "0") &+ UInt8(d1))
            if d2 != 0 || d3 != 0 { bytes.append(UInt8(ascii: "0") &+ UInt8(d2)) }
            if d3 != 0 { bytes.append(UInt8(ascii: "0") &+ UInt8(d3)) }
        }
    }

    /// A quoted, escaped string.
    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { appendEscaped($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A quoted string that is known to need no escaping (our own constants).
    mutating func string(_ value: StaticString) {
        bytes.append(UInt8(ascii: "\""))
        value.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var i = 0
        let n = utf8.count
        while i < n {
            let b = utf8[i]
            // Bytes >= 0x80 are parts of valid UTF-8 sequences and pass through.
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") && b != 0x7F {
                i += 1
                continue
            }
            if runStart < i {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
            }
            bytes.append(UInt8(ascii: "\\"))
            switch b {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
            default:
                bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          Self.hex[Int(b >> 4)], Self.hex[Int(b & 0xF)]])
            }
            i += 1
            runStart = i
        }
        if runStart < n {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<n]))
        }
    }

    // MARK: Time

    /// `"YYYY-MM-DDTHH:MM:SS.ffffffZ"` (RFC 3339, UTC, exactly 6 fractional digits).
    mutating func timestamp(unixMicroseconds micros: Int64) {
        let (seconds, fraction) = Self.floorDivMod(micros, 1_000_000)
        let (days, secondOfDay) = Self.floorDivMod(seconds, 86_400)
        let (year, month, day) = Self.civil(fromDays: days)
        bytes.append(UInt8(ascii: "\""))
        if year < 0 || year > 9999 {
            int(year)  // outside RFC 3339's range; never happens with a sane clock
        } else {
            digits(Int(year), width: 4)
        }
        bytes.append(UInt8(ascii: "-"))
        digits(month, width: 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, width: 2)
        bytes.append(UInt8(ascii: "T"))
        let sod = Int(secondOfDay)
        digits(sod / 3600, width: 2)
        bytes.append(UInt8(ascii: ":"))
        digits(sod / 60 % 60, width: 2)
        bytes.append(UInt8(ascii: ":"))
        digits(sod % 60, width: 2)
        bytes.append(UInt8(ascii: "."))
        digits(Int(fraction), width: 6)
        bytes.append(UInt8(ascii: "Z"))
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func digits(_ value: Int, width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var v = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v / divisor))
            v %= divisor
            divisor /= 10
        }
    }

    static func floorDivMod(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var q = a / b
        var r = a % b
        if r < 0 {
            q -= 1
            r += b
        }
        return (q, r)
    }

    /// Proleptic Gregorian date for days since 1970-01-01 (H. Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (y, Int(m), Int(d))
    }
}
