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

    /// `appendField`, `setValue` and `removeFields` leave the same fields as `append`, the
    /// subscript's setter and removing one by one, on every shape of list.
    @Test func inPlaceChangesMatchHTTPFieldsOwn() throws {
        let custom = try #require(HTTPField.Name("X-Trace"))
        let cases: [HTTPFields] = [
            [:],
            [.host: "a.test"],
            [.accept: "*/*", .host: "a.test", .via: "1.0 x"],
            [.host: "a.test", .accept: "*/*", .host: "b.test", custom: "1", .host: "c.test"],
            [custom: "1", .connection: "keep-alive", custom: "2", .te: "trailers"],
        ]
        for original in cases {
            var own = original
            var inPlace = original
            own.append(HTTPField(name: .via, value: "1.1 lookout"))
            inPlace.appendField(HTTPField(name: .via, value: "1.1 lookout"))
            #expect(inPlace == own && Array(inPlace) == Array(own))

            for name in [HTTPField.Name.host, custom, .cookie] {
                var own = original
                var inPlace = original
                own[name] = "set"
                inPlace.setValue("set", for: name)
                #expect(Array(inPlace) == Array(own), "\(name) in \(original)")
            }
            var cookie = original
            cookie.setValue("a=1; b=2", for: .cookie)  // split into crumbs, as the subscript does
            #expect(cookie[values: .cookie] == ["a=1", "b=2"])

            for doomed in [[HTTPField.Name.host], [custom, .te], [.accept, .host, .via, custom, .connection, .te]] {
                var own = original
                var index = own.endIndex
                while index > own.startIndex {
                    index -= 1
                    if doomed.contains(own[index].name) { own.remove(at: index) }
                }
                var inPlace = original
                inPlace.removeFields { doomed.contains($0.name) }
                #expect(Array(inPlace) == Array(own), "\(doomed) from \(original)")
            }
            #expect(original.withFieldBuffer { Array($0) } == Array(original))
        }
    }

    /// A change made in place to one copy does not show in another sharing its storage.
    @Test func inPlaceChangesCopyOnWrite() {
        let original: HTTPFields = [.host: "a.test", .connection: "close"]
        var changed = original
        changed.appendField(HTTPField(name: .via, value: "1.1 lookout"))
        changed.setValue("b.test", for: .host)
        changed.removeFields { $0.name == .connection }
        #expect(Array(original) == [HTTPField(name: .host, value: "a.test"), HTTPField(name: .connection, value: "close")])
        #expect(Array(changed) == [HTTPField(name: .host, value: "b.test"), HTTPField(name: .via, value: "1.1 lookout")])
    }
}
