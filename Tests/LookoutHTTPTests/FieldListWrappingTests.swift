import HTTPTypes
import Testing

@testable import LookoutHTTP

/// Parsed fields are handed to `HTTPFields` as one array; the result behaves as fields appended
/// one by one would.
struct FieldListWrappingTests {
    /// With the swift-http-types this package builds against, the array is taken in place. If a
    /// new version changes `HTTPFields`' layout this fails, and parsing falls back to appending.
    @Test func wrapsInPlaceWithThisHTTPTypes() {
        #expect(FieldListWrapping.wrapsInPlace)
    }

    @Test func wrappedFieldsMatchAppendedOnes() throws {
        let custom = try #require(HTTPField.Name("X-Trace"))
        let list = [
            HTTPField(name: .contentType, value: "text/plain"),
            HTTPField(name: custom, value: "one"),
            HTTPField(name: .via, value: "1.1 a"),
            HTTPField(name: custom, value: "two"),
            HTTPField(name: .contentLength, value: [0x31, 0x32]),
            HTTPField(name: .server, value: [0x61, 0xE9, 0x62]),  // obs-text kept as bytes
        ]
        var appended = HTTPFields()
        for field in list { appended.append(field) }
        let wrapped = FieldListWrapping.fields(list)
        #expect(wrapped == appended)
        #expect(Array(wrapped) == list)
        #expect(wrapped[custom] == "one, two")
        #expect(wrapped[values: custom] == ["one", "two"])
        #expect(wrapped[.contentLength] == "12")
        #expect(wrapped.count == 6)
        #expect(FieldListWrapping.fields([]) == HTTPFields())
    }

    /// A wrapped value is an ordinary `HTTPFields`: changing one copy leaves the other and the
    /// array it came from as they were.
    @Test func wrappedFieldsAreIndependentValues() {
        let list = [HTTPField(name: .accept, value: "*/*"), HTTPField(name: .host, value: "a.test")]
        let wrapped = FieldListWrapping.fields(list)
        var changed = wrapped
        changed[.host] = "b.test"
        changed.append(HTTPField(name: .via, value: "1.1 lookout"))
        changed[.accept] = nil
        #expect(wrapped[.host] == "a.test" && wrapped.count == 2)
        #expect(list[1].value == "a.test")
        #expect(changed[.host] == "b.test" && changed[.via] == "1.1 lookout" && changed.count == 2)
    }
}
