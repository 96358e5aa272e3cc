import LookoutHTTP
import Testing

@Suite struct FormURLEncodingTests {
    @Test func pairsInOrderDecoded() {
        let pairs = FormURLEncoding.pairs("filter=status%3A5xx+or+kind%3Atunnel&verbose=1&flag&=x", lenient: false)
        #expect(pairs.map(\.name) == ["filter", "verbose", "flag", ""])
        #expect(pairs.map(\.value) == ["status:5xx or kind:tunnel", "1", "", "x"])
    }

    @Test func malformedEscapes() {
        #expect(FormURLEncoding.pairs("a=%zz&b=2", lenient: false).map(\.name) == ["b"])
        #expect(FormURLEncoding.pairs("a=%zz&b=%4", lenient: true).map(\.value) == ["%zz", "%4"])
        #expect(FormURLEncoding.decode("%ff", lenient: false) == nil)  // not UTF-8
        #expect(FormURLEncoding.decode("%ff", lenient: true) == "\u{FFFD}")
        #expect(FormURLEncoding.decode("caf%C3%A9", lenient: false) == "café")
    }

    @Test func parametersKeepTheLastValue() {
        #expect(FormURLEncoding.parameters("a=1&a=2&b=") == ["a": "2", "b": ""])
        #expect(FormURLEncoding.parameters(nil).isEmpty)
    }
}
