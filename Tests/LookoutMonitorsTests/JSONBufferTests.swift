import Foundation
import Testing
@testable import LookoutMonitors
@testable import LookoutModel

@Suite struct JSONBufferTests {
    private func text(_ build: (inout JSONBuffer) -> Void) -> String {
        var buffer = JSONBuffer()
        build(&buffer)
        return String(decoding: buffer.contents, as: UTF8.self)
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000000Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
        (951_782_400_123_456, "2000-02-29T00:00:00.123456Z"),
        (1_924_991_045_123_456, "2030-12-31T23:44:05.123456Z"),
        (1_930_367_167_890_123, "2031-03-04T05:06:07.890123Z"),
        (253_402_300_799_999_999, "9999-12-31T23:59:59.999999Z"),
    ])
    func timestamp(micros: Int64, expected: String) {
        #expect(text { $0.timestamp(unixMicroseconds: micros) } == "\"\(expected)\"")
    }

    @Test func timestampsAgreeWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var seconds: Int64 = -2_000_000_000
        while seconds < 5_000_000_000 {
            let ours = text { $0.timestamp(unixMicroseconds: seconds * 1_000_000 + 250_000) }
            let theirs = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            #expect(ours == "\"" + theirs.dropLast() + ".250000Z\"")
            seconds += 86_400 * 17 + 3_607
        }
    }

    @Test(arguments: [
        (1.4, "1.4"), (0.05, "0.05"), (0.12, "0.12"), (-1, "-1"), (0, "0"), (12, "12"),
        (0.0004, "0"), (-0.0004, "0"), (1234.5678, "1234.568"), (0.0005, "0.001"), (1e12, "1000000000000"),
        (.nan, "-1"), (.infinity, "-1"), (-.infinity, "-1"), (1e300, "-1"), (-2.5, "-2.5"), (100.1, "100.1"),
    ] as [(Double, String)])
    func milliseconds(value: Double, expected: String) {
        #expect(text { $0.milliseconds(value) } == expected)
    }

    @Test func integers() {
        #expect(text { $0.uint(0) } == "0")
        #expect(text { $0.uint(UInt64.max) } == "18446744073709551615")
        #expect(text { $0.int(Int64.min) } == "-9223372036854775808")
        #expect(text { $0.int(-42) } == "-42")
        #expect(text { $0.int(1_000_000) } == "1000000")
    }

    @Test func stringEscaping() throws {
        let cases: [(String, String)] = [
            ("plain", #""plain""#),
            ("\"quoted\"", #""\"quoted\"""#),
            ("back\\slash", #""back\\slash""#),
            ("line\nbreak\r\n", #""line\nbreak\r\n""#),
            ("tab\t", #""tab\t""#),
            ("\u{0}\u{8}\u{C}\u{1B}\u{1F}\u{7F}", #""\u0000\u0008\u000c\u001b\u001f\u007f""#),
            ("é日本🚀\u{2028}", "\"é日本🚀\u{2028}\""),
            ("", #""""#),
            ("/</script>", #""/</script>""#),
        ]
        for (input, expected) in cases {
            let encoded = text { $0.string(input) }
            #expect(encoded == expected)
            let decoded = try JSONSerialization.jsonObject(with: Data(encoded.utf8), options: .fragmentsAllowed)
            #expect(decoded as? String == input)
        }
    }

    @Test func objectsAndArrays() {
        let json = text {
            $0.beginObject()
            $0.key("a"); $0.int(1)
            $0.key("b"); $0.beginObject(); $0.endObject()
            $0.key("c"); $0.beginArray()
            $0.element(); $0.string("x")
            $0.element(); $0.beginObject(); $0.key("d"); $0.bool(true); $0.endObject()
            $0.endArray()
            $0.key(dynamic: "e\"f"); $0.bool(false)
            $0.endObject()
            $0.endLine()
        }
        #expect(json == #"{"a":1,"b":{},"c":["x",{"d":true}],"e\"f":false}"# + "\n")
    }

    @Test(arguments: [
        ("http://user:pass@host/p", "http://user:[redacted]@host/p"),
        ("http://user:pass@host:8080", "http://user:[redacted]@host:8080"),
        ("HTTPS://u:p:q@h/?x=@", "HTTPS://u:[redacted]@h/?x=@"),
        ("http://a:b@c@host/", "http://a:[redacted]@host/"),
        ("http://user@host/", "http://user@host/"),
        ("http://user:@host/", "http://user:@host/"),
        ("http://host/path@x:y", "http://host/path@x:y"),
        ("http://host/?u=a:b@c", "http://host/?u=a:b@c"),
        ("//u:p@host/", "//u:[redacted]@host/"),
        ("u:p@host:443", "u:[redacted]@host:443"),
        ("host:443", "host:443"),
        ("/path@a:b", "/path@a:b"),
        ("http://[::1]:80/", "http://[::1]:80/"),
        ("http://u:p@[::1]:80/", "http://u:[redacted]@[::1]:80/"),
    ])
    func urlPasswordRedaction(url: String, expected: String) {
        #expect(redactingURLPassword(url) == expected)
    }
}
