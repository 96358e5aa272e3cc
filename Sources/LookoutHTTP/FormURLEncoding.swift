/// `application/x-www-form-urlencoded` query strings (`a=b&c=d`): percent-decoded, `+` a space.
public enum FormURLEncoding {
    /// The pairs of `query`, in order. A name or value with a malformed escape (`%zz`) is kept as
    /// written when `lenient`, and drops its pair otherwise.
    public static func pairs(_ query: Substring, lenient: Bool) -> [(name: String, value: String)] {
        query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0], lenient: lenient) else { return nil }
            guard parts.count > 1 else { return (name, "") }
            guard let value = decode(parts[1], lenient: lenient) else { return nil }
            return (name, value)
        }
    }

    /// The pairs of `query` by name (a repeated name keeps its last value); malformed pairs dropped.
    public static func parameters(_ query: String?) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in pairs(Substring(query ?? ""), lenient: false) { result[name] = value }
        return result
    }

    /// Percent-decoded text (invalid UTF-8 is nil, or repaired when `lenient`).
    public static func decode(_ text: Substring, lenient: Bool) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                if utf8.count >= 2, let high = hexValue(utf8[utf8.startIndex]),
                   let low = hexValue(utf8[utf8.index(after: utf8.startIndex)]) {
                    bytes.append(high << 4 | low)
                    utf8 = utf8.dropFirst(2)
                    continue
                }
                guard lenient else { return nil }
            }
            bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
        }
        return lenient ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
