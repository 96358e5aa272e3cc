/// A JSON value located in a line without being decoded: what `lookout log` needs to filter a
/// gigabyte of records fast is where each field is, and to decode only the few a filter asks for.
public struct JSONSpan: Sendable {
    /// Byte offsets into the line (the value's first byte and one past its last).
    public let start: Int
    public let end: Int
}

/// Scans JSON text in place.
public enum JSONScan {
    /// The members of the object that starts at `from` (after whitespace), as key → span, or nil
    /// when the text there is not a well-formed object. Keys are decoded (they are short); values
    /// are only located.
    public static func members(_ b: UnsafeBufferPointer<UInt8>, from: Int = 0) -> [(key: String, value: JSONSpan)]? {
        var i = skipSpace(b, from)
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        var result: [(key: String, value: JSONSpan)] = []
        i = skipSpace(b, i)
        if i < b.count, b[i] == UInt8(ascii: "}") { return result }
        while i < b.count {
            i = skipSpace(b, i)
            guard i < b.count, b[i] == UInt8(ascii: "\""), let keyEnd = stringEnd(b, i) else { return nil }
            let key = decodeString(b, i, keyEnd) ?? ""
            i = skipSpace(b, keyEnd)
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
            i = skipSpace(b, i + 1)
            guard let valueEnd = valueEnd(b, i) else { return nil }
            result.append((key, JSONSpan(start: i, end: valueEnd)))
            i = skipSpace(b, valueEnd)
            guard i < b.count else { return nil }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { return result }
            return nil
        }
        return nil
    }

    @inline(__always) static func skipSpace(_ b: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int {
        var i = from
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        return i
    }

    /// One past the closing quote of the string starting at `from`.
    static func stringEnd(_ b: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int? {
        var i = from + 1
        while i < b.count {
            switch b[i] {
            case UInt8(ascii: "\\"): i += 2
            case UInt8(ascii: "\""): return i + 1
            default: i += 1
            }
        }
        return nil
    }

    /// One past the end of the value starting at `from`.
    static func valueEnd(_ b: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int? {
        guard from < b.count else { return nil }
        switch b[from] {
        case UInt8(ascii: "\""):
            return stringEnd(b, from)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = from
            while i < b.count {
                switch b[i] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(b, i) else { return nil }
                    i = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default:
                    break
                }
                i += 1
            }
            return nil
        default:
            var i = from
            while i < b.count, b[i] != UInt8(ascii: ","), b[i] != UInt8(ascii: "}"), b[i] != UInt8(ascii: "]"),
                  b[i] != 0x20, b[i] != 0x0A, b[i] != 0x0D, b[i] != 0x09 { i += 1 }
            return i > from ? i : nil
        }
    }

    /// The decoded text of the string spanning `start..<end` (quotes included).
    static func decodeString(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> String? {
        guard end - start >= 2 else { return nil }
        let inner = UnsafeBufferPointer(rebasing: b[(start + 1)..<(end - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(inner.count)
        var i = 0
        while i < inner.count {
            let c = inner[i]
            guard c == UInt8(ascii: "\\"), i + 1 < inner.count else { out.append(c); i += 1; continue }
            let e = inner[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "u"):
                guard i + 4 <= inner.count,
                      let code = UInt32(String(decoding: UnsafeBufferPointer(rebasing: inner[i..<(i + 4)]), as: UTF8.self), radix: 16)
                else { return nil }
                i += 4
                var scalar = code
                if (0xD800..<0xDC00).contains(code), i + 6 <= inner.count, inner[i] == UInt8(ascii: "\\"),
                   inner[i + 1] == UInt8(ascii: "u"),
                   let low = UInt32(String(decoding: UnsafeBufferPointer(rebasing: inner[(i + 2)..<(i + 6)]), as: UTF8.self), radix: 16),
                   (0xDC00..<0xE000).contains(low) {
                    scalar = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                out.append(contentsOf: Array(String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8))
            default: out.append(e)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
