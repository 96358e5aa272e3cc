import Testing
@testable import LookoutHTTP

@Suite struct HTTPDateTests {
    private let time = 784_111_777.0  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func theThreeFormsOfRFC9110() {
        #expect(HTTPDate.unixSeconds("Sun, 06 Nov 1994 08:49:37 GMT") == time)
        #expect(HTTPDate.unixSeconds("Sunday, 06-Nov-94 08:49:37 GMT") == time)
        #expect(HTTPDate.unixSeconds("Sun Nov  6 08:49:37 1994") == time)
        #expect(HTTPDate.unixSeconds("Thu, 18 Aug 2050 02:01:18 GMT") != nil)
    }

    /// The dates the HTTP cache tests (cache-tests.fyi) require a cache to reject.
    @Test func datesOffTheGrammarAreInvalid() {
        for text in ["Thu 18 Aug 2050 02:01:18 GMT",      // no comma
                     "Thu, 18 Aug  2050 02:01:18 GMT",    // doubled space
                     "Thu,  18 Aug 2050 02:01:18 GMT",
                     "Thu, 18-Aug-2050 02:01:18 GMT",     // RFC 850 shape with a four-digit year
                     "Thursday, 18-Aug-2050 02:01:18 GMT",
                     "Thu, 18 Aug 2050 2:01:18 GMT",      // a one-digit hour
                     "Sun Nov 6 08:49:37 1994",           // asctime without its padding
                     "Sunday, 6-Nov-94 08:49:37 GMT", "0", ""] {
            #expect(HTTPDate.unixSeconds(text) == nil, "\(text)")
        }
    }

    /// A year below 1000 is written with the four digits the grammar requires, so the date
    /// reads back.
    @Test func formattedDatesReadBackForEveryFourDigitYear() throws {
        let early = try #require(HTTPDate.unixSeconds("Sun, 06 Nov 0991 08:49:37 GMT"))
        #expect(HTTPDate.format(unixSeconds: Int64(early)) == "Sun, 06 Nov 0991 08:49:37 GMT")
        #expect(HTTPDate.format(unixSeconds: Int64(time)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.yearText(7) == "0007" && HTTPDate.yearText(12345) == "12345")
    }
}
