import Testing
@testable import LookoutLogQuery

func withRecord<T>(_ json: String, _ body: (LogRecord) -> T) -> T {
    var text = json
    return text.withUTF8 { body(LogRecord($0)!) }
}

let sample = #"{"v":1,"ts":"2026-11-24T00:10:54.284025Z","event":"exchange","id":7,"conn":2,"client":"127.0.0.1:5","kind":"intercepted","method":"POST","url":"https://u:p@API.Example.com:8443/v1/items?q=\"x\"","http_version":"HTTP/2","stream_id":3,"status":503,"upstream":{"address":"127.0.0.1:8443","protocol":"h2","tls":{"trust":{"result":"failed","presented_pins":["a"]}}},"timings_ms":{"blocked":0,"dns":-1,"connect":2.5,"tls":3,"send":0.01,"wait":120.5,"receive":1,"total":650},"bytes":{"request_body":10,"response_body":20},"cache":{"status":"miss","stored":false},"error":{"code":"upstream_closed","message":"x"},"request_headers":{"content-type":"application/json; charset=utf-8","x-esc":"a\"b\\c\u00e9"}}"#

@Suite struct JSONScanTests {
    @Test func locatesMembersAndDecodesOnDemand() {
        withRecord(sample) { r in
            #expect(r.string("kind") == "intercepted" && r.number("status") == 503 && r.number("id") == 7)
            #expect(r.number("timings_ms", "wait") == 120.5 && r.number("timings_ms", "dns") == -1)
            #expect(r.string("upstream", "tls", "trust", "result") == "failed")
            #expect(r.string("url") == #"https://u:p@API.Example.com:8443/v1/items?q="x""#)
            #expect(r.host == "api.example.com")
            #expect(r.stringMembers("request_headers").last?.1 == "a\"b\\cé")
            #expect(r.bool("cache", "stored") == false)
        }
    }

    @Test func refusesWhatIsNotAnObject() {
        for text in ["", "[1]", "{\"a\":", "{\"a\" 1}", "{\"a\":\"unterminated}", "garbage"] {
            var t = text
            #expect(t.withUTF8 { LogRecord($0) } == nil, "\(text)")
        }
    }
}

@Suite struct LogFilterTests {
    func matches(_ expression: String) throws -> Bool {
        let filter = try LogFilter.parse(expression)
        return withRecord(sample) { filter.matches($0) }
    }

    /// Thousands of "(" must not run the recursive parser out of stack: nesting and the number
    /// of terms are bounded, with a column for the error.
    @Test func deepOrHugeFiltersAreRefused() throws {
        let deep = String(repeating: "(", count: 5000) + "status:200" + String(repeating: ")", count: 5000)
        #expect(throws: LogFilterError.self) { try LogFilter.parse(deep) }
        do { _ = try LogFilter.parse(String(repeating: "not ", count: 40) + "status:200") } catch {
            #expect(error.message.contains("nested more than 32") && error.column == 129)
        }
        let many = Array(repeating: "status:200", count: 257).joined(separator: " or ")
        do { _ = try LogFilter.parse(many) } catch { #expect(error.message.contains("more than 256 terms")) }
        #expect(try matches(String(repeating: "(", count: 32) + "status:503" + String(repeating: ")", count: 32)))
        #expect(try matches(Array(repeating: "status:503", count: 256).joined(separator: " and ")))
    }

    @Test func everyFieldAndOperator() throws {
        for (expression, expected) in [
            ("host:api.example.com", true), ("host:*.example.com", true), ("host:other.com", false),
            ("status:5xx", true), ("status:503", true), ("status:4xx", false), ("status>=500", true), ("status<500", false),
            ("method:post", true), ("method:GET", false),
            ("code:upstream_*", true), ("code:upstream_closed", true), ("code:client_*", false),
            ("kind:intercepted", true), ("kind:http", false),
            (#"url~"/v1/""#, true), ("url~/v2/", false), ("url:https://*/items*", true),
            ("header:content-type~json", true), ("header:Content-Type~JSON", true), ("header:x-missing~a", false),
            ("total>500ms", true), ("total>0.5s", true), ("total>1s", false), ("wait>100ms", true), ("wait<=120.5", true),
            ("dns>0", false), ("dns<1", false),  // -1: the phase did not happen
            ("connect>2000us", true), ("trust:failed", true), ("trust:passed", false),
            ("cache:miss", true), ("cache:hit", false), ("client:127.0.0.1:*", true), ("id:7", true), ("conn>2", false),
            ("version:HTTP/2", true), ("version:http/1.1", false), ("protocol:h2", true), ("protocol:http/1.1", false),
        ] {
            #expect(try matches(expression) == expected, "\(expression)")
        }
    }

    @Test func booleanStructure() throws {
        #expect(try matches("status:5xx method:POST"))  // side by side = and
        #expect(try matches("status:5xx and method:POST"))
        #expect(try !matches("status:5xx and method:GET"))
        #expect(try matches("method:GET or status:503"))
        #expect(try matches("not method:GET"))
        #expect(try matches("not (method:GET or kind:http) and (cache:miss or cache:hit)"))
        #expect(try !matches("not not method:GET"))
        #expect(try matches("NOT method:GET AND status:5xx"))
        // and binds tighter than or
        #expect(try matches("method:GET and kind:http or status:503"))
    }

    @Test func errorsPointAtTheColumn() {
        func failure(_ expression: String) -> LogFilterError? {
            do { _ = try LogFilter.parse(expression); return nil } catch { return error }
        }
        #expect(failure("hots:a")?.column == 1)
        #expect(failure("hots:a")?.message.hasPrefix("unknown field \"hots\"") == true)
        #expect(failure("status:5x") == LogFilterError(column: 8, message: "\"5x\" is not a status (e.g. 404 or 5xx)"))
        #expect(failure("total>fast")?.column == 7)
        #expect(failure("total:5ms")?.message.contains("takes > >= < <=") == true)
        #expect(failure("method>GET")?.message == "method takes : or ~, not >")
        #expect(failure("(status:5xx")?.message == "unbalanced \"(\"")
        #expect(failure("status:5xx)")?.column == 11)
        #expect(failure("status:5xx and")?.column == 15)
        #expect(failure("or status:5xx")?.message == "\"or\" needs a term on each side")
        #expect(failure("url~\"open")?.message == "unterminated quoted value")
        #expect(failure("host:")?.message == "expected a value after \"host:\"")
        #expect(failure("example.com")?.message.contains("is not a term") == true)
        #expect(failure("header:~x")?.column == 8)
        #expect(failure("") != nil)
    }

    @Test func globs() {
        #expect(Glob.matches("a*", "abc") && Glob.matches("*c", "abc") && Glob.matches("a*c", "abc") && Glob.matches("*", ""))
        #expect(!Glob.matches("a*d", "abc") && Glob.matches("a*b*c", "aXbYc") && !Glob.matches("a*b*c", "aXcYb"))
    }
}

@Suite struct LogSummaryTests {
    @Test func percentilesAreWithinTheBucketPrecision() {
        var histogram = PhaseHistogram()
        let values = (1...10_000).map { Double($0) * 0.37 }  // 0.37 ms … 3.7 s
        for v in values.shuffled() { histogram.add(milliseconds: v) }
        for p in [50.0, 95.0, 99.0] {
            let exact = values[Int((p / 100 * Double(values.count)).rounded(.up)) - 1]
            let got = histogram.percentile(p)!
            #expect(abs(got - exact) <= exact * 0.002 + 0.001, "p\(p): \(got) vs \(exact)")
        }
        #expect(PhaseHistogram().percentile(50) == nil)
    }

    @Test func timesParse() {
        #expect(LogTime.timestamp("1970-01-01T00:00:01Z") == 1_000_000)
        #expect(LogTime.timestamp("2026-11-24T00:10:54.284025Z")! % 1_000_000 == 284_025)
        #expect(LogTime.timestamp("1970-01-01T01:00:00+01:00") == 0)
        #expect(LogTime.timestamp("1970-01-01T00:00:00.5Z") == 500_000)
        #expect(LogTime.timestamp("1970-01-01T00:00:00.1234567Z") == 123_456)
        #expect(LogTime.timestamp("yesterday") == nil && LogTime.timestamp("1970-13-01T00:00:00Z") == nil)
        #expect(LogTime.parse("15m", now: 1_000_000_000) == Int64(100_000_000))
    }
}

@Suite struct LogFormatTests {
    /// Numbers beyond Int's range (or JSON's `1e400`, infinite as a Double) render in the table,
    /// CSV and HAR formats and go through the filter without a trap.
    @Test func numbersOutOfRangeRenderInEveryFormat() throws {
        let line = #"{"v":1,"ts":"2026-11-24T00:10:54.284025Z","event":"exchange","id":1e400,"conn":133333333333333333333333333333333,"status":-1e300,"method":"GET","url":"http://h/","timings_ms":{"total":1e308},"bytes":{"request_body":1e30,"response_body":-5}}"#
        for format in LogFormat.allCases {
            let text = withRecord(line) { format.render($0, index: 0) }
            #expect(!text.isEmpty || format == .curl)
        }
        #expect(withRecord(line) { LogFormat.csv.render($0, index: 0) }.contains("1.3333333333333333e+32"))
        let filter = try LogFilter.parse("status:5xx")
        #expect(withRecord(line) { filter.matches($0) } == false)
        #expect(LogTime.parse("1e300d", now: 0) == nil && LogTime.parse("2m", now: 200_000_000) == 80_000_000)
    }

    @Test func csvAndCurlQuote() {
        #expect(LogFormat.csvField("a,b") == "\"a,b\"" && LogFormat.csvField("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(LogFormat.shellQuoted("it's") == "'it'\\''s'")
        let line = #"{"event":"exchange","method":"POST","url":"http://h/a","request_headers":{"host":"h","content-type":"text/plain","proxy-authorization":"[redacted]","x-q":"it's"},"capture":{"request":"/cap/1.request"}}"#
        let command = withRecord(line) { LogFormat.curl.render($0, index: 0) }
        #expect(command == "curl -X 'POST' 'http://h/a' -H 'content-type: text/plain' -H 'x-q: it'\\''s' --data-binary '@/cap/1.request'\n")
    }
}

@Suite struct ContentDecodingTests {
    let text = Array(String(repeating: "hello, lookout ", count: 20).utf8)
    let gzipped: [UInt8] = [31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 203, 72, 205, 201, 201, 215, 81, 200, 201, 207, 207, 206, 47, 45,
                            81, 200, 24, 229, 226, 230, 2, 0, 40, 46, 59, 80, 44, 1, 0, 0]
    let brotli: [UInt8] = [27, 43, 1, 0, 4, 28, 114, 164, 159, 199, 22, 92, 42, 33, 24, 100, 182, 18, 188, 78, 11, 187, 90, 63, 0]
    let rawDeflate: [UInt8] = [203, 72, 205, 201, 201, 215, 81, 200, 201, 207, 207, 206, 47, 45, 81, 200, 24, 229, 226, 230, 2, 0]

    @Test func decodesEachCoding() {
        #expect(ContentDecoding.decode(gzipped, contentEncoding: "gzip") == .decoded(text))
        #expect(ContentDecoding.decode(brotli, contentEncoding: "br") == .decoded(text))
        #expect(ContentDecoding.decode(rawDeflate, contentEncoding: "deflate") == .decoded(text))
        #expect(ContentDecoding.decode(text, contentEncoding: nil) == .decoded(text))
        #expect(ContentDecoding.decode(text, contentEncoding: "identity") == .decoded(text))
    }

    @Test func refusesWhatItCannotDecode() {
        #expect(ContentDecoding.decode(Array(gzipped.prefix(20)), contentEncoding: "gzip") == .corrupt("gzip"))
        #expect(ContentDecoding.decode(text, contentEncoding: "br") == .corrupt("br"))
        #expect(ContentDecoding.decode(text, contentEncoding: "zstd") == .unsupported("zstd"))
        #expect(ContentDecoding.decode(gzipped, contentEncoding: "gzip, br") == .unsupported("gzip, br"))
        #expect(ContentDecoding.decode(gzipped, contentEncoding: "gzip", limit: 100) == .tooLarge)
    }

    @Test func harPieces() {
        #expect(Base64.encode(Array("Man".utf8)) == "TWFu" && Base64.encode(Array("Ma".utf8)) == "TWE="
                && Base64.encode(Array("M".utf8)) == "TQ==" && Base64.encode([]) == "")
        #expect(HARFormat.queryString("http://h/p?a=1&b=x%20y&c&d=+#f").map { "\($0)=\($1)" } == ["a=1", "b=x y", "c=", "d= "])
        #expect(HARFormat.cookies("a=1; b=2", separator: ";").map { "\($0)=\($1)" } == ["a=1", "b=2"])
        #expect(HARFormat.cookies("s=abc; Path=/; HttpOnly", separator: nil).map { "\($0)=\($1)" } == ["s=abc"])
        #expect(HARFormat.isoTime(1_000_123_456) == "1970-01-01T00:16:40.123Z")
    }
}

/// A subject that is not a log line: an exchange on its way, as breakpoints and hooks see it.
private struct LiveSubject: FilterSubject {
    var modified = false
    func filterText(_ field: LogFilter.Field) -> String? {
        switch field {
        case .host: return "api.example.com"
        case .method: return "POST"
        case .url: return "https://api.example.com/v1/items"
        default: return nil
        }
    }
    func filterNumber(_ field: LogFilter.Field) -> Double? { field == .id ? 9 : nil }
    func filterHeaderValues(_ name: String) -> [String] { name == "content-type" ? ["application/json"] : [] }
    var filterModified: Bool { modified }
}

@Suite struct FilterSubjectTests {
    @Test func filtersMatchAnExchangeOnItsWayAndWhatIsNotKnownYetDoesNot() throws {
        for (expression, expected) in [
            ("host:**.example.com and method:POST", true), ("url~/v1/", true), ("header:content-type~json", true),
            ("id:9", true), ("status:5xx", false), ("total>1ms", false), ("code:*", false), ("not code:*", true),
            ("modified:true", false), ("modified:false", true),
        ] {
            #expect(try LogFilter.parse(expression).matches(LiveSubject()) == expected, "\(expression)")
        }
        #expect(try LogFilter.parse("modified:true").matches(LiveSubject(modified: true)))
    }

    @Test func modifiedFindsRecordsSomethingChanged() throws {
        let filter = try LogFilter.parse("modified:true")
        #expect(withRecord(#"{"id":1,"modified_by":["breakpoint:1"]}"#) { filter.matches($0) })
        #expect(!withRecord(#"{"id":1}"#) { filter.matches($0) })
        #expect(throws: LogFilterError.self) { try LogFilter.parse("modified:yes") }
        #expect(throws: LogFilterError.self) { try LogFilter.parse("modified~t") }
    }

    @Test func messageFieldsReadTheMessagesObject() throws {
        let record = #"{"id":1,"messages":{"protocol":"websocket","count":120,"first_event_ms":620.5,"close_code":1006,"grpc_status":5}}"#
        for (expression, expected) in [
            ("messages>100", true), ("messages<100", false), ("messages:120", true), ("first_event>500ms", true),
            ("first_event>1s", false), ("ws.close:1006", true), ("ws.close:1000", false), ("grpc.status:5", true),
            ("grpc.status>0 and messages>=120", true),
        ] {
            let filter = try LogFilter.parse(expression)
            #expect(withRecord(record) { filter.matches($0) } == expected, "\(expression)")
        }
        let any = try LogFilter.parse("messages>=0")
        #expect(!withRecord(#"{"id":1}"#) { any.matches($0) }, "no messages object")
        #expect(throws: LogFilterError.self) { try LogFilter.parse("first_event:5") }
        let ja4 = try LogFilter.parse("ja4:t13d1516h2_*")
        #expect(withRecord(#"{"id":1,"tls":{"client_ja4":"t13d1516h2_8daaf6152771_d8a2da3f94cd"}}"#) { ja4.matches($0) })
        #expect(!withRecord(#"{"id":1,"tls":{"client_ja4":"t12d1209h1_1"}}"#) { ja4.matches($0) })
        #expect(throws: LogFilterError.self) { try LogFilter.parse("ws.close~10") }
    }

    /// HAR 1.2 requires send, wait and receive to be non-negative: a phase that did not happen is 0
    /// there (an admin page's), -1 only for blocked, dns, connect and ssl.
    @Test func harTimingsNeverHaveANegativeSendWaitOrReceive() throws {
        let line = #"{"v":1,"ts":"2026-11-24T00:10:54.284025Z","event":"exchange","id":3,"kind":"admin","method":"GET","url":"http://127.0.0.1:8080/metrics","status":200,"timings_ms":{"blocked":-1,"dns":-1,"connect":-1,"tls":-1,"send":-1,"wait":-1,"receive":-1,"total":0.2}}"#
        let entry = withRecord(line) { HARFormat.entry($0, index: 0) }
        #expect(entry.contains(#""send":0"#) && entry.contains(#""wait":0"#) && entry.contains(#""receive":0"#), "\(entry)")
        #expect(entry.contains(#""dns":-1"#) && entry.contains(#""blocked":-1"#))
    }
}
