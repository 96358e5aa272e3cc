import HTTPTypes
import LookoutHTTP
import Testing

/// `HTTPFields.value(for:)` answers exactly what the subscript answers.
struct FieldLookupTests {
    @Test func answersWhatTheSubscriptAnswers() throws {
        let cookie = HTTPField.Name.cookie
        let custom = try #require(HTTPField.Name("X-Trace"))
        let cases: [HTTPFields] = [
            [:],
            [.contentLength: "12"],
            [.contentType: "text/plain", .contentLength: "12"],
            [.via: "1.1 a", .contentLength: "3", .via: "1.1 b"],
            [custom: "one", .contentType: "x", custom: "two", custom: "three"],
        ]
        for var fields in cases {
            for name in [HTTPField.Name.contentLength, .contentType, .via, custom, .accept] {
                #expect(fields.value(for: name) == fields[name], "\(name) in \(fields)")
            }
            // Cookie crumbs are joined with "; ", as the subscript does.
            fields.append(HTTPField(name: cookie, value: "a=1"))
            #expect(fields.value(for: cookie) == "a=1")
            fields.append(HTTPField(name: cookie, value: "b=2"))
            #expect(fields.value(for: cookie) == "a=1; b=2")
        }
    }

    @Test func matchesNamesWithoutRegardToCase() throws {
        let upper = try #require(HTTPField.Name("CONTENT-LENGTH"))
        let fields: HTTPFields = [upper: "7"]
        #expect(fields.value(for: .contentLength) == "7")
    }
}
