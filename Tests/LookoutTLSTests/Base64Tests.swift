import LookoutTLS
import Testing

@Suite struct Base64Tests {
    @Test func urlSafeDecodingAsHTTP2SettingsCarriesIt() {
        #expect(Base64.decodeURLSafe("AAMAAABkAARAAAAAAAIAAAAA") == [0, 3, 0, 0, 0, 100, 0, 4, 64, 0, 0, 0, 0, 2, 0, 0, 0, 0])
        #expect(Base64.decodeURLSafe("-_8") == [0xFB, 0xFF])
        #expect(Base64.decodeURLSafe("+/8") == nil && Base64.decodeURLSafe("AA==") == nil && Base64.decodeURLSafe("A") == nil)
    }

    @Test func standardRoundTrip() {
        #expect(Base64.decode(Base64.encode([1, 2, 3, 4])) == [1, 2, 3, 4])
    }
}
