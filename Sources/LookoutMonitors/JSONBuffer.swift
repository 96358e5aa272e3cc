import LookoutHTTP
/// A hand-written JSON encoder that appends to a reusable byte buffer.
///
/// Objects and arrays are built with `beginObject`/`key`/`endObject` and
/// `beginArray`/`element`/`endArray`; commas are inserted automatically. Keys are static ASCII
/// (they are ours and need no escaping); dynamic keys (header names) go through `key(dynamic:)`.
/// Strings are escaped per RFC 8259; valid UTF-8 (every Swift `String`) passes through unchanged.
struct JSONBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    /// Bytes written so far.
    private(set) var count = 0
    private var capacity: Int
    private let initialCapacity: Int
    /// True right after `{` or `[`: the next member needs no comma.
    private var atStart = true
    /// How event payloads written through `EventFieldWriter` treat secrets (`LogRecords.swift`).
    var recordOptions = LogRecordOptions(revealSecrets: false, includeHeaders: false)

    init(capacity: Int = 256) {
        initialCapacity = max(capacity, 64)
        self.capacity = initialCapacity
        base = .allocate(capacity: initialCapacity)
    }

    deinit {
        base.deallocate()
    }

    /// The bytes written so far (valid until the next mutation).
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// A copy of the bytes written so far.
    var contents: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Empties the buffer; memory grown for an unusually large batch is given back.
    mutating func removeAll() {
        count = 0
        atStart = true
        if capacity > 4 * initialCapacity {
            base.deallocate()
            capacity = initialCapacity
            base = .allocate(capacity: capacity)
        }
    }

    @inline(__always) private mutating func reserve(_ extra: Int) {
        if count &+ extra > capacity { grow(extra) }
    }

    private mutating func grow(_ extra: Int) {
        let newCapacity = max(capacity * 2, count + extra)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always) private mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count &+= 1
    }

    @inline(__always) private mutating func append(_ a: UInt8, _ b: UInt8) {
        reserve(2)
        base[count] = a
        base[count &+ 1] = b
        count &+= 2
    }

    @inline(__always) private mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count &+= bytes.count
    }

    /// Appends a record already encoded (by another monitor, without its newline) as a line.
    mutating func appendLine(encoded record: [UInt8]) {
        record.withUnsafeBufferPointer { append($0) }
        endLine()
    }

    /// A copy of the bytes from `start` to the end, less a final newline.
    func line(from start: Int) -> [UInt8] {
        var end = count
        if end > start, base[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        return Array(UnsafeBufferPointer(start: base + start, count: end - start))
    }

    /// Appends ASCII we know needs no escaping.
    /// JSON `null`.
    mutating func null() { raw("null") }

    @inline(__always) private mutating func raw(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    // MARK: Structure

    mutating func beginObject() {
        append(UInt8(ascii: "{"))
        atStart = true
    }

    mutating func endObject() {
        append(UInt8(ascii: "}"))
        atStart = false
    }

    mutating func beginArray() {
        append(UInt8(ascii: "["))
        atStart = true
    }

    mutating func endArray() {
        append(UInt8(ascii: "]"))
        atStart = false
    }

    /// Starts an array element (writes the separating comma if needed).
    mutating func element() {
        if !atStart { append(UInt8(ascii: ",")) }
        atStart = false
    }

    /// Writes `"name":` (with a leading comma when needed). `name` must not need escaping.
    mutating func key(_ name: StaticString) {
        let length = name.utf8CodeUnitCount
        reserve(length &+ 4)
        if !atStart {
            base[count] = UInt8(ascii: ",")
            count &+= 1
        }
        atStart = false
        base[count] = UInt8(ascii: "\"")
        (base + (count &+ 1)).update(from: name.utf8Start, count: length)
        base[count &+ 1 &+ length] = UInt8(ascii: "\"")
        base[count &+ 2 &+ length] = UInt8(ascii: ":")
        count &+= length &+ 3
    }

    /// Writes an escaped dynamic key.
    mutating func key(dynamic name: String) {
        if !atStart { append(UInt8(ascii: ",")) }
        atStart = false
        string(name)
        append(UInt8(ascii: ":"))
    }

    /// Appends a newline; the buffer is then ready for the next record.
    mutating func endLine() {
        append(UInt8(ascii: "\n"))
        atStart = true
    }

    // MARK: Scalars

    mutating func bool(_ value: Bool) {
        if value {
            raw("true")
        } else {
            raw("false")
        }
    }

    mutating func int<T: BinaryInteger>(_ value: T) {
        if value < 0 {
            append(UInt8(ascii: "-"))
            // magnitude of the most negative Int64 still fits in UInt64
            uint(UInt64(value.magnitude))
        } else {
            uint(UInt64(value))
        }
    }

    mutating func uint(_ value: UInt64) {
        if value < 10 {
            append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        var width = 1
        var probe = value
        while probe >= 10 {
            probe /= 10
            width &+= 1
        }
        reserve(width)
        var v = value
        var i = count &+ width
        while v > 0 {
            i &-= 1
            base[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
            v /= 10
        }
        count &+= width
    }

    /// A duration in milliseconds rounded to 3 decimals, without exponent and without trailing
    /// zeros (`1.4`, `0.05`, `12`); non-finite or absurd values are written as `-1`.
    mutating func milliseconds(_ value: Double) {
        guard value.isFinite else {
            raw("-1")
            return
        }
        let scaled = (value * 1000).rounded()
        guard scaled.magnitude < 9.0e18 else {
            raw("-1")
            return
        }
        var n = Int64(scaled)
        if n < 0 {
            append(UInt8(ascii: "-"))
            n = -n
        }
        uint(UInt64(n / 1000))
        let frac = Int(n % 1000)
        if frac != 0 {
            append(UInt8(ascii: "."))
            let d1 = frac / 100, d2 = frac / 10 % 10, d3 = frac % 10
            append(UInt8(ascii: "0") &+ UInt8(d1))
            if d2 != 0 || d3 != 0 { append(UInt8(ascii: "0") &+ UInt8(d2)) }
            if d3 != 0 { append(UInt8(ascii: "0") &+ UInt8(d3)) }
        }
    }

    /// A quoted, escaped string.
    mutating func string(_ value: String) {
        append(UInt8(ascii: "\""))
        value.withUTF8InPlace { appendEscaped($0) }
        append(UInt8(ascii: "\""))
    }

    /// A quoted string that is known to need no escaping (our own constants).
    mutating func string(_ value: StaticString) {
        append(UInt8(ascii: "\""))
        value.withUTF8Buffer { append($0) }
        append(UInt8(ascii: "\""))
    }

    @inline(__always) private func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
    }

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
                append(UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
            }
            append(UInt8(ascii: "\\"))
            switch b {
            case UInt8(ascii: "\""): append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): append(UInt8(ascii: "\\"))
            case UInt8(ascii: "\n"): append(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"): append(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"): append(UInt8(ascii: "t"))
            default:
                append(UInt8(ascii: "u"), UInt8(ascii: "0"))
                append(UInt8(ascii: "0"), hexDigit(b >> 4))
                append(hexDigit(b & 0xF))
            }
            i += 1
            runStart = i
        }
        if runStart < n {
            append(UnsafeBufferPointer(rebasing: utf8[runStart..<n]))
        }
    }

    // MARK: Time

    /// `"YYYY-MM-DDTHH:MM:SS.ffffffZ"` (RFC 3339, UTC, exactly 6 fractional digits).
    mutating func timestamp(unixMicroseconds micros: Int64) {
        let (seconds, fraction) = Self.floorDivMod(micros, 1_000_000)
        let (days, secondOfDay) = Self.floorDivMod(seconds, 86_400)
        let (year, month, day) = Self.civil(fromDays: days)
        append(UInt8(ascii: "\""))
        if year < 0 || year > 9999 {
            int(year)  // outside RFC 3339's range; never happens with a sane clock
        } else {
            digits(Int(year), width: 4)
        }
        append(UInt8(ascii: "-"))
        digits(month, width: 2)
        append(UInt8(ascii: "-"))
        digits(day, width: 2)
        append(UInt8(ascii: "T"))
        let sod = Int(secondOfDay)
        digits(sod / 3600, width: 2)
        append(UInt8(ascii: ":"))
        digits(sod / 60 % 60, width: 2)
        append(UInt8(ascii: ":"))
        digits(sod % 60, width: 2)
        append(UInt8(ascii: "."))
        digits(Int(fraction), width: 6)
        append(UInt8(ascii: "Z"))
        append(UInt8(ascii: "\""))
    }

    private mutating func digits(_ value: Int, width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var v = value
        while divisor > 0 {
            append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v / divisor))
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

    /// Proleptic Gregorian date for days since 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let (year, month, day) = HTTPDate.civil(fromDays: days)
        return (Int64(year), month, day)
    }
}
