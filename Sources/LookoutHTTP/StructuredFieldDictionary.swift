/// A Structured Field Dictionary (RFC 9651 §3.2), parsed strictly as §4.2 requires: any error
/// makes the whole field invalid (`parse` returns nil), which is what a field defined as a
/// Structured Field, such as `CDN-Cache-Control` (RFC 9213 §2.1), needs to be ignored as a whole.
///
/// Only what a reader of directives needs is kept: each member's key, and its bare item's type and
/// value (an inner list is kept as its type only). Parameters are checked, then dropped.
public enum StructuredFieldDictionary {
    public enum Item: Sendable, Equatable {
        case integer(Int64)
        case decimal(Double)
        case string(String)
        case token(String)
        case byteSequence
        case boolean(Bool)
        case date(Int64)
        case displayString
        case innerList
    }

    /// The members in order; a key given twice keeps its last value at its first position (§4.2.2).
    public static func parse(_ lines: [String]) -> [(key: String, value: Item)]? {
        var parser = Parser(Array(lines.joined(separator: ",").utf8))
        return parser.dictionary()
    }

    struct Parser {
        let b: [UInt8]
        var i = 0
        init(_ bytes: [UInt8]) { b = bytes }

        var atEnd: Bool { i >= b.count }
        var current: UInt8 { b[i] }

        static func isLCAlpha(_ c: UInt8) -> Bool { c >= 0x61 && c <= 0x7A }
        static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A }

        mutating func skipSP() { while !atEnd, current == 0x20 { i += 1 } }
        mutating func skipOWS() { while !atEnd, current == 0x20 || current == 0x09 { i += 1 } }

        /// §4.2.2. Leading and trailing SP are discarded first (§4.2 step 2).
        mutating func dictionary() -> [(key: String, value: Item)]? {
            skipSP()
            var members: [(key: String, value: Item)] = []
            while !atEnd {
                guard let key = key() else { return nil }
                let value: Item
                if !atEnd, current == 0x3D {  // "="
                    i += 1
                    guard let item = memberValue() else { return nil }
                    value = item
                } else {
                    value = .boolean(true)
                    guard parameters() else { return nil }
                }
                if let index = members.firstIndex(where: { $0.key == key }) {
                    members[index].value = value
                } else {
                    members.append((key, value))
                }
                skipOWS()
                if atEnd { return members }
                guard current == 0x2C else { return nil }  // ","
                i += 1
                skipOWS()
                if atEnd { return nil }  // a trailing comma
            }
            return members
        }

        /// An Item or an Inner List, with its parameters.
        mutating func memberValue() -> Item? {
            if !atEnd, current == 0x28 {  // "("
                i += 1
                while true {
                    skipSP()
                    guard !atEnd else { return nil }
                    if current == 0x29 { i += 1; break }
                    guard bareItem() != nil, parameters() else { return nil }
                    guard !atEnd, current == 0x20 || current == 0x29 else { return nil }
                }
                return parameters() ? .innerList : nil
            }
            guard let item = bareItem(), parameters() else { return nil }
            return item
        }

        /// §4.2.3.3: key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )
        mutating func key() -> String? {
            guard !atEnd, Self.isLCAlpha(current) || current == 0x2A else { return nil }
            let start = i
            while !atEnd, Self.isLCAlpha(current) || Self.isDigit(current) || current == 0x5F || current == 0x2D
                || current == 0x2E || current == 0x2A
            {
                i += 1
            }
            return String(decoding: b[start..<i], as: UTF8.self)
        }

        /// §4.2.3.2
        mutating func parameters() -> Bool {
            while !atEnd, current == 0x3B {  // ";"
                i += 1
                skipSP()
                guard key() != nil else { return false }
                if !atEnd, current == 0x3D {
                    i += 1
                    guard bareItem() != nil else { return false }
                }
            }
            return true
        }

        /// §4.2.3.1
        mutating func bareItem() -> Item? {
            guard !atEnd else { return nil }
            let c = current
            if c == 0x2D || Self.isDigit(c) { return number() }
            if c == 0x22 { return string().map(Item.string) }
            if c == 0x2A || Self.isAlpha(c) { return token() }
            if c == 0x3A { return byteSequence() }
            if c == 0x3F { return boolean() }
            if c == 0x40 {  // "@" Date (RFC 9651 §4.2.9)
                i += 1
                if case .integer(let seconds)? = number() { return .date(seconds) }
                return nil
            }
            if c == 0x25 { return displayString() }
            return nil
        }

        /// §4.2.4: at most 15 integer digits, or 12 before and 3 after a decimal point.
        mutating func number() -> Item? {
            guard !atEnd else { return nil }
            var negative = false
            if current == 0x2D { negative = true; i += 1 }
            guard !atEnd, Self.isDigit(current) else { return nil }
            let start = i
            var dot: Int?
            while !atEnd {
                let c = current
                if Self.isDigit(c) {
                    i += 1
                } else if c == 0x2E, dot == nil {
                    if i - start > 12 { return nil }
                    dot = i
                    i += 1
                } else {
                    break
                }
                if dot == nil && i - start > 15 { return nil }
                if dot != nil && i - start > 16 { return nil }
            }
            let text = String(decoding: b[start..<i], as: UTF8.self)
            if let dot {
                let fraction = i - dot - 1
                guard fraction >= 1 && fraction <= 3, let value = Double(text) else { return nil }
                return .decimal(negative ? -value : value)
            }
            guard let value = Int64(text) else { return nil }
            return .integer(negative ? -value : value)
        }

        /// §4.2.5
        mutating func string() -> String? {
            i += 1
            var out: [UInt8] = []
            while !atEnd {
                let c = current
                i += 1
                if c == 0x5C {
                    guard !atEnd, current == 0x22 || current == 0x5C else { return nil }
                    out.append(current)
                    i += 1
                } else if c == 0x22 {
                    return String(decoding: out, as: UTF8.self)
                } else if c < 0x20 || c > 0x7E {
                    return nil
                } else {
                    out.append(c)
                }
            }
            return nil
        }

        /// §4.2.6: tchar, ":" and "/" after the first character.
        mutating func token() -> Item? {
            let start = i
            i += 1
            while !atEnd, current == 0x3A || current == 0x2F
                || charTable[Int(current)] & CharClass.token != 0
            {
                i += 1
            }
            return .token(String(decoding: b[start..<i], as: UTF8.self))
        }

        /// §4.2.7: ":" base64 ":"
        mutating func byteSequence() -> Item? {
            i += 1
            while !atEnd, current != 0x3A {
                let c = current
                guard Self.isAlpha(c) || Self.isDigit(c) || c == 0x2B || c == 0x2F || c == 0x3D else { return nil }
                i += 1
            }
            guard !atEnd else { return nil }
            i += 1
            return .byteSequence
        }

        /// §4.2.8
        mutating func boolean() -> Item? {
            i += 1
            guard !atEnd else { return nil }
            let c = current
            i += 1
            if c == 0x31 { return .boolean(true) }
            if c == 0x30 { return .boolean(false) }
            return nil
        }

        /// RFC 9651 §4.2.10: "%" DQUOTE *( unescaped / "\" / pct-encoded ) DQUOTE
        mutating func displayString() -> Item? {
            i += 1
            guard !atEnd, current == 0x22 else { return nil }
            i += 1
            while !atEnd {
                let c = current
                i += 1
                if c == 0x22 { return .displayString }
                if c == 0x25 {
                    guard i + 1 < b.count else { return nil }
                    let hex: (UInt8) -> Bool = { Self.isDigit($0) || ($0 >= 0x61 && $0 <= 0x66) }
                    guard hex(b[i]), hex(b[i + 1]) else { return nil }
                    i += 2
                } else if c < 0x20 || c > 0x7E {
                    return nil
                }
            }
            return nil
        }
    }
}
