import Testing
import LookoutHTTP

@Suite struct UTF8InPlaceTests {
    private func bytes(_ text: String) -> [UInt8] {
        text.withUTF8InPlace { Array($0) }
    }

    @Test func smallLargeEmptyAndNonASCIIStringsGiveTheirUTF8() {
        #expect(bytes("") == [])
        #expect(bytes("GET") == Array("GET".utf8))  // small: its bytes spilled to the stack
        let large = "http://example.test/a/rather/long/path?with=query"
        #expect(bytes(large) == Array(large.utf8))  // large: read where it lies
        #expect(bytes("grüße, 世界 and then some more") == Array("grüße, 世界 and then some more".utf8))
    }

    @Test func aLargeStringIsReadInPlace() {
        let large = String(repeating: "x", count: 64)
        let inPlace = large.withUTF8InPlace { UnsafeRawPointer($0.baseAddress!) }
        let viewed = large.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress!) }
        #expect(viewed != nil && inPlace == viewed)
    }

    @Test func aStringBuiltFromPartsIsReadWhole() {
        var text = "prefix-"
        for index in 0..<20 { text += "\(index)," }
        #expect(String(decoding: bytes(text), as: UTF8.self) == text)
    }
}
