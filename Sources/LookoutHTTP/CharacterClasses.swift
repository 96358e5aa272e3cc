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
    /// Bytes allowed in a request-target: VCHAR except '#'.
    static let target: UInt8 = 1 << 2
    static let hex: UInt8 = 1 << 3
    /// reg-name / IPv4 characters: unreserved, sub-delims, '%'.
    static let regName: UInt8 = 1 << 4
    /// Scheme characters after the first: ALPHA / DIGIT / "+" / "-" / ".".
    static let scheme: UInt8 = 1 << 5
    /// quoted-string qdtext (HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text).
    static let qdtext: UInt8 = 1 << 6
}

/// Global table, allocated once and never freed.
nonisolated(unsafe) let charTable: UnsafePointer<UInt8> = {
    let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
    table.initialize(repeating: 0, count: 256)
    for b in 0..<256 {
        var f: UInt8 = 0
        let isAlpha = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
        let isDigit = b >= 0x30 && b <= 0x39
        let isVChar = b >= 0x21 && b <= 0x7E
        if isAlpha || isDigit || "!#$%&'*+-.^_`|~".utf8.contains(UInt8(b)) { f |= CharClass.token }
        if isVChar || b >= 0x80 || b == 0x20 || b == 0x09 { f |= CharClass.fieldValue }
        if isVChar && b != 0x23 { f |= CharClass.target }
        if isDigit || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66) { f |= CharClass.hex }
        if isAlpha || isDigit || "-._~!$&'()*+,;=%".utf8.contains(UInt8(b)) { f |= CharClass.regName }
        if isAlpha || isDigit || "+-.".utf8.contains(UInt8(b)) { f |= CharClass.scheme }
        if b == 0x09 || b == 0x20 || b == 0x21 || (b >= 0x23 && b <= 0x5B) || (b >= 0x5D && b <= 0x7E) || b >= 0x80 {
            f |= CharClass.qdtext
        }
        table[b] = f
    }
    return UnsafePointer(table)
}()

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
