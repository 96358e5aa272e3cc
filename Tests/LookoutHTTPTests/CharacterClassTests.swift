import Testing

@testable import LookoutHTTP

@Suite struct CharacterClassTests {
    @Test func tableMatchesRFCDefinitions() {
        for b in 0..<256 {
            var f: UInt8 = 0
            let isAlpha = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            let isDigit = b >= 0x30 && b <= 0x39
            let isVChar = b >= 0x21 && b <= 0x7E
            if isAlpha || isDigit || "!#$%&'*+-.^_`|~".utf8.contains(UInt8(b)) { f |= CharClass.token }
            if isVChar || b >= 0x80 || b == 0x20 || b == 0x09 { f |= CharClass.fieldValue }
            if (isVChar && b != 0x23) || b >= 0x80 { f |= CharClass.target }
            if isDigit || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66) { f |= CharClass.hex }
            if isAlpha || isDigit || "-._~!$&'()*+,;=%".utf8.contains(UInt8(b)) { f |= CharClass.regName }
            if isAlpha || isDigit || "+-.".utf8.contains(UInt8(b)) { f |= CharClass.scheme }
            if b == 0x09 || b == 0x20 || b == 0x21 || (b >= 0x23 && b <= 0x5B) || (b >= 0x5D && b <= 0x7E) || b >= 0x80 {
                f |= CharClass.qdtext
            }
            #expect(charTable[b] == f, "byte \(b)")
        }
    }
}
