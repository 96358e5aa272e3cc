import Testing
@testable import LookoutLogQuery

@Suite struct RecordingArchiveTests {
    /// The octal number in a header field (its digits up to the NUL or space).
    private func octal(_ header: [UInt8], _ range: Range<Int>) -> UInt64? {
        UInt64(String(decoding: header[range].prefix { $0 != 0 && $0 != 32 }, as: UTF8.self), radix: 8)
    }

    @Test func aTarHeaderCarriesItsNameSizeAndChecksum() {
        let header = TarFormat.header(name: "lookout-recording/capture/7.response", size: 1234, modified: 1_700_000_000)
        #expect(header.count == 512)
        #expect(String(decoding: header[0..<100].prefix { $0 != 0 }, as: UTF8.self) == "lookout-recording/capture/7.response")
        #expect(octal(header, 124..<136) == 1234 && octal(header, 136..<148) == 1_700_000_000)
        #expect(Array(header[257..<265]) == Array("ustar\u{0}00".utf8) && header[156] == UInt8(ascii: "0"))
        var blanked = header
        for index in 148..<156 { blanked[index] = 32 }
        #expect(octal(header, 148..<156) == blanked.reduce(0) { $0 + UInt64($1) })
    }

    @Test func aLongNameGoesInThePrefixAndAHugeSizeIsBase256() {
        let folder = String(repeating: "d", count: 90)
        let header = TarFormat.header(name: folder + "/" + String(repeating: "f", count: 40), size: 9 << 30, modified: 0)
        #expect(String(decoding: header[0..<100].prefix { $0 != 0 }, as: UTF8.self) == String(repeating: "f", count: 40))
        #expect(String(decoding: header[345..<500].prefix { $0 != 0 }, as: UTF8.self) == folder)
        #expect(header[124] == 0x80)
        #expect(header[116..<136].suffix(8).reduce(0) { $0 << 8 | UInt64($1) } == 9 << 30)
    }

    @Test func contentIsPaddedToWholeBlocks() {
        #expect(TarFormat.padding(after: 0).isEmpty && TarFormat.padding(after: 512).isEmpty)
        #expect(TarFormat.padding(after: 1).count == 511 && TarFormat.padding(after: 1000).count == 24)
        #expect(TarFormat.end.count == 1024 && TarFormat.end.allSatisfy { $0 == 0 })
    }

    @Test func gzipWrittenInPiecesDecodesWhole() throws {
        let writer = try #require(GzipWriter())
        var input: [UInt8] = []
        var output: [UInt8] = []
        for piece in 0..<40 {
            let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 31 + piece * 7) }
            input += bytes
            output += writer.write(bytes)
        }
        output += writer.finish()
        #expect(writer.finish().isEmpty && writer.write([1]).isEmpty, "nothing after the trailer")
        #expect(output.count < input.count && output.prefix(2) == [0x1f, 0x8b])
        #expect(ContentDecoding.decode(output, contentEncoding: "gzip") == .decoded(input))
    }

    @Test func captureTakesRelativeUniqueNamesAndTheRestOfTheLineIsKept() {
        var archive = RecordingArchive()
        archive.add(Array(#"{"id":1,"url":"http://a/","capture":{"request":"/var/cap/1.request","response":"/var/cap/1.response","truncated":false},"status":200}"#.utf8))
        archive.add(Array(#"{"id":2,"url":"http://b/","status":204}"#.utf8))
        archive.add(Array(#"{"id":1,"url":"http://c/","capture":{"response":"/old/cap/1.response"}}"#.utf8))
        archive.add(Array("not json".utf8))
        let lines = String(decoding: archive.log, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines == [
            #"{"id":1,"url":"http://a/","capture":{"request":"capture/1.request","response":"capture/1.response","truncated":false},"status":200}"#,
            #"{"id":2,"url":"http://b/","status":204}"#,
            #"{"id":1,"url":"http://c/","capture":{"response":"capture/2-1.response"}}"#,
            "not json",
        ])
        #expect(archive.files.map(\.name) == ["capture/1.request", "capture/1.response", "capture/2-1.response"])
        #expect(archive.files.map(\.path) == ["/var/cap/1.request", "/var/cap/1.response", "/old/cap/1.response"])
    }
}
