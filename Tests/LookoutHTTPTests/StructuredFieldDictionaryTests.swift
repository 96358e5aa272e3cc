import Testing

@testable import LookoutHTTP

/// RFC 9651 §4.2.2: dictionaries, with the examples of §3.2 and the errors that void a field.
@Suite struct StructuredFieldDictionaryTests {
    typealias Item = StructuredFieldDictionary.Item

    static func members(_ lines: String...) -> [String]? {
        StructuredFieldDictionary.parse(lines).map { $0.map { "\($0.key)=\($0.value)" } }
    }

    @Test func itemsOfEveryType() throws {
        let parsed = try #require(StructuredFieldDictionary.parse([
            #"a=1, b=-2.5, c="x\"y", d=tok/en:1, e=:aGVsbG8=:, f=?0, g, h=@1659578233, i=%"f%c3%bc", j=(1 "two";p=1)"#
        ]))
        #expect(parsed.map(\.key) == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"])
        #expect(parsed.map(\.value) == [.integer(1), .decimal(-2.5), .string("x\"y"), .token("tok/en:1"), .byteSequence,
                                        .boolean(false), .boolean(true), .date(1_659_578_233), .displayString, .innerList])
    }

    @Test func parametersAreCheckedAndDropped() {
        #expect(Self.members("max-age=60;ttl=1;x, no-cache;a=\"b\"") == ["max-age=integer(60)", "no-cache=boolean(true)"])
        #expect(Self.members("a=1;B=2") == nil)
    }

    @Test func lastValueWinsAtFirstPosition() {
        #expect(Self.members("a=1, b=2", "a=3") == ["a=integer(3)", "b=integer(2)"])
    }

    @Test func emptyFieldIsAnEmptyDictionary() {
        #expect(Self.members("") == [])
        #expect(Self.members("   ") == [])
    }

    @Test(arguments: [
        "MaX-aGe=3600",  // keys are lowercase
        "max-age =100", "max-age= 100",  // no whitespace around "="
        "max-age=10000, &&&&&", "a=1,", ",a=1", "a=1,,b=2",
        "a=1234567890123456",  // 16 integer digits
        "a=1.2345", "a=1234567890123.5", "a=1.",  // decimal limits
        "a=\"unterminated", "a=\"tab\there\"", "a=\"bad\\escape\"",
        "a=:not base64!:", "a=?2", "a=(1 2", "a=(1,2)", "a=@1.5", "a=%\"%C3\"", "a=%\"%zz\"",
        "a=1 b=2", "a=1\t,b=2x",
    ])
    func invalidFieldsAreRejectedWhole(_ text: String) {
        #expect(StructuredFieldDictionary.parse([text]) == nil)
    }

    @Test func whitespaceAroundMembersIsAllowed() {
        #expect(Self.members("  a=1 ,\tb=2  ") == ["a=integer(1)", "b=integer(2)"])
    }
}

/// Items cut off by the end of the field (inputs of the cache_fields fuzz target): invalid, and
/// never read past the end.
@Suite struct StructuredFieldFuzzRegressions {
    @Test(arguments: ["e=@", "a=1, e=@", "a=-", "a=%", "a=%\"", "a=?", "a=:", "a=\"\\"])
    func truncatedItemsAreInvalid(_ text: String) {
        #expect(StructuredFieldDictionary.parse([text]) == nil)
    }
}
