#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte classes used by the parser, as a 256-entry bit table.
@usableFromInline
enum CharClass {
    /// RFC 9110 tchar.
    static let token: UInt8 = 1 << 0
    /// field-vchar / SP / HTAB (VCHAR, obs-text, SP, HTAB).
    static let fieldValue: UInt8 = 1 << 1
    /// Bytes allowed in a request-target: VCHAR except '#', and obs-text (bytes >= 0x80: UTF-8 that some
    /// clients send unencoded; the parser accepts it only as valid UTF-8).
    static let target: UInt8 = 1 << 2
    static let hex: UInt8 = 1 << 3
    /// reg-name / IPv4 characters: unreserved, sub-delims, '%'.
    static let regName: UInt8 = 1 << 4
    /// Scheme characters after the first: ALPHA / DIGIT / "+" / "-" / ".".
    static let scheme: UInt8 = 1 << 5
    /// quoted-string qdtext (HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text).
    static let qdtext: UInt8 = 1 << 6
}

/// The class bits of every byte value, as a compile-time constant (no lazy global initialisation on the
/// hot path). Every entry is < 0x80 so the literal is plain ASCII. `CharacterClassTests` re-derives the
/// table from the RFC definitions and compares.
@inline(__always)
var charTable: UnsafePointer<UInt8> {
    let table: StaticString = """
\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{42}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\
\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\u{00}\
\u{42}\u{57}\u{06}\u{43}\u{57}\u{57}\u{57}\u{57}\u{56}\u{56}\u{57}\u{77}\u{56}\u{77}\u{77}\u{46}\
\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{46}\u{56}\u{46}\u{56}\u{46}\u{46}\
\u{46}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\
\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{46}\u{06}\u{46}\u{47}\u{57}\
\u{47}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{7F}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\
\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{77}\u{46}\u{47}\u{46}\u{57}\u{00}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\
\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}\u{46}
"""
    return table.utf8Start
}

enum ASCII {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B
    static let comma: UInt8 = 0x2C
    static let equals: UInt8 = 0x3D
    static let quote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C
    static let slash: UInt8 = 0x2F
    static let question: UInt8 = 0x3F
    static let at: UInt8 = 0x40
    static let lbracket: UInt8 = 0x5B
    static let rbracket: UInt8 = 0x5D
    static let star: UInt8 = 0x2A
}

/// A read-only view of bytes with cheap, unchecked access. `base` may be nil only when `count` is 0.
struct Bytes {
    let base: UnsafePointer<UInt8>?
    let count: Int

    @inline(__always)
    init(_ raw: UnsafeRawBufferPointer) {
        self.base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self)
        self.count = raw.count
    }

    @inline(__always)
    init(base: UnsafePointer<UInt8>?, count: Int) {
        self.base = base
        self.count = count
    }

    @inline(__always)
    subscript(i: Int) -> UInt8 { base.unsafelyUnwrapped[i] }

    /// Index of the first `byte` in `from..<to`, or nil.
    @inline(__always)
    func find(_ byte: UInt8, from: Int, to: Int) -> Int? {
        guard to > from, let base else { return nil }
        guard let p = memchr(base + from, Int32(byte), to - from) else { return nil }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(p))
    }

    /// Index of the last `byte` in `from..<to`, or nil.
    @inline(__always)
    func findLast(_ byte: UInt8, from: Int, to: Int) -> Int? {
        guard to > from else { return nil }
        var i = to - 1
        while i >= from {
            if self[i] == byte { return i }
            i -= 1
        }
        return nil
    }

    /// True when no byte in `from..<to` is >= 0x80 (eight bytes at a time).
    @inline(__always)
    func isASCII(_ from: Int, _ to: Int) -> Bool {
        guard to > from, let base else { return true }
        let raw = UnsafeRawPointer(base)
        var i = from
        var high: UInt64 = 0
        while i + 8 <= to {
            high |= raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        var tail: UInt8 = 0
        while i < to {
            tail |= self[i]
            i += 1
        }
        return high & 0x8080_8080_8080_8080 == 0 && tail < 0x80
    }

    func isValidUTF8(_ from: Int, _ to: Int) -> Bool {
        String(validating: UnsafeBufferPointer(start: base.map { $0 + from }, count: to - from), as: UTF8.self) != nil
    }

    @inline(__always)
    func all(_ cls: UInt8, from: Int, to: Int) -> Bool {
        var i = from
        while i < to {
            if charTable[Int(self[i])] & cls == 0 { return false }
            i += 1
        }
        return true
    }

    @inline(__always)
    func raw(_ from: Int, _ to: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base.map { UnsafeRawPointer($0 + from) }, count: to - from)
    }

    @inline(__always)
    func containsUppercase(_ from: Int, _ to: Int) -> Bool {
        var i = from
        while i < to {
            let b = self[i]
            if b >= 0x41 && b <= 0x5A { return true }
            i += 1
        }
        return false
    }

    /// Checks field-value bytes (HTAB / SP / VCHAR / obs-text) eight at a time. Returns (valid, isASCII).
    @inline(__always)
    func validateFieldValue(_ from: Int, _ to: Int) -> (Bool, Bool) {
        guard to > from, let base else { return (true, true) }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var i = from
        var high: UInt64 = 0
        let raw = UnsafeRawPointer(base)
        while i + 8 <= to {
            let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            // A byte < 0x20 (CTL, or HTAB) or == 0x7F (DEL) needs the exact per-byte check.
            let lt20 = (x &- ones &* 0x20) & ~x & highs
            let y = x ^ (ones &* 0x7F)
            let is7F = (y &- ones) & ~y & highs
            if lt20 | is7F != 0 {
                var k = i
                while k < i + 8 {
                    if charTable[Int(self[k])] & CharClass.fieldValue == 0 { return (false, false) }
                    k += 1
                }
            }
            high |= x
            i += 8
        }
        var tail: UInt8 = 0
        while i < to {
            let b = self[i]
            if charTable[Int(b)] & CharClass.fieldValue == 0 { return (false, false) }
            tail |= b
            i += 1
        }
        return (true, high & highs == 0 && tail < 0x80)
    }

    /// ASCII-lowercased string of `from..<to` (bytes other than A-Z unchanged).
    func lowercasedString(_ from: Int, _ to: Int) -> String {
        if !containsUppercase(from, to) { return string(from, to) }
        return String(unsafeUninitializedCapacity: to - from) { out in
            var i = 0
            while i < to - from {
                let b = self[from + i]
                out[i] = (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
                i += 1
            }
            return to - from
        }
    }

    func string(_ from: Int, _ to: Int) -> String {
        String(decoding: UnsafeBufferPointer(start: base.map { $0 + from }, count: to - from), as: UTF8.self)
    }

    /// ASCII case-insensitive comparison of `from..<to` with a lowercase ASCII literal
    /// made of letters, digits and '-'.
    @inline(__always)
    func equalsLowercase(_ from: Int, _ to: Int, _ literal: StaticString) -> Bool {
        guard to - from == literal.utf8CodeUnitCount else { return false }
        let lit = literal.utf8Start
        var i = 0
        while i < to - from {
            let b = self[from + i]
            let l = lit[i]
            if b != l {
                // Only letters differ by case.
                guard l >= 0x61 && l <= 0x7A, b | 0x20 == l else { return false }
            }
            i += 1
        }
        return true
    }
}

@inline(__always)
func isOWS(_ b: UInt8) -> Bool { b == ASCII.sp || b == ASCII.htab }

@inline(__always)
func hexValue(_ b: UInt8) -> UInt64? {
    switch b {
    case 0x30...0x39: return UInt64(b - 0x30)
    case 0x41...0x46: return UInt64(b - 0x41 + 10)
    case 0x61...0x66: return UInt64(b - 0x61 + 10)
    default: return nil
    }
}

extension Bytes {
    @inline(__always)
    func equalsExact(_ from: Int, _ to: Int, _ literal: StaticString) -> Bool {
        guard to - from == literal.utf8CodeUnitCount else { return false }
        guard let base else { return to == from }
        return memcmp(base + from, literal.utf8Start, to - from) == 0
    }
}

/// Runs `body` over the bytes of `array` with a typed error.
@inline(__always)
func withBytes<R>(_ array: [UInt8], _ body: (Bytes) throws(HTTPParseError) -> R) throws(HTTPParseError) -> R {
    let result: Result<R, HTTPParseError> = array.withUnsafeBytes { raw in
        do throws(HTTPParseError) {
            return .success(try body(Bytes(raw)))
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}
