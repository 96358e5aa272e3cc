import Foundation
import Testing
@testable import LookoutRecordings
import LookoutModel

@Suite struct JSONDiffTests {
    private func changes(_ a: String, _ b: String, ignoring: [String] = []) -> [JSONDiff.Change] {
        JSONDiff.changes(JSONDiff.parse(Array(a.utf8))!, JSONDiff.parse(Array(b.utf8))!, ignoring: ignoring)
    }

    @Test func keyOrderDoesNotMatterAndPathsNameWhatDiffers() {
        #expect(changes(#"{"a":1,"b":[1,2]}"#, #"{"b":[1,2],"a":1}"#).isEmpty)
        let found = changes(#"{"a":1,"b":[1,2],"c":true}"#, #"{"a":2,"b":[1],"c":1,"d":null}"#)
        #expect(found.map(\.path) == ["$.a", "$.b[1]", "$.c", "$.d"])
        #expect(found.map(\.kind) == ["changed", "removed", "changed", "added"], "true is not 1")
        #expect(found.first?.a == "1" && found.first?.b == "2")
    }

    @Test func ignoredPathsAndAnyIndex() {
        let a = #"{"requestId":"x1","items":[{"id":1,"ts":5},{"id":2,"ts":6}]}"#
        let b = #"{"requestId":"y2","items":[{"id":1,"ts":7},{"id":2,"ts":8}]}"#
        #expect(changes(a, b).count == 3)
        #expect(changes(a, b, ignoring: ["$.requestId", "$.items[*].ts"]).isEmpty)
        #expect(changes(a, b, ignoring: ["$.requestId", "$.items[0].ts"]).map(\.path) == ["$.items[1].ts"])
        #expect(JSONDiff.parse(Array("plain text".utf8)) == nil)
    }
}

@Suite struct RecordingDiffTests {
    private func exchange(_ index: Int, _ url: String, status: Int = 200, headers: [(String, String)] = [],
                          body: String = "", ms: Double = 10) -> RecordedExchange {
        RecordedExchange(index: index, method: "GET", url: url, status: status, requestHeaders: [],
                         responseHeaders: headers.map { ($0.0, $0.1) }, responseBody: .bytes(Array(body.utf8)),
                         totalMilliseconds: ms)
    }

    @Test func repeatedRequestsPairInOrderAndTheRestIsAddedOrMissing() {
        let a = [exchange(0, "http://a/x", body: "1"), exchange(1, "http://a/x", body: "2"), exchange(2, "http://a/gone")]
        let b = [exchange(0, "http://a/x", body: "1"), exchange(1, "http://a/new"), exchange(2, "http://a/x", body: "3")]
        let diff = RecordingDiff(a, b, options: .init())
        #expect(diff.pairs == 2 && diff.added.map(\.url) == ["http://a/new"] && diff.missing.map(\.url) == ["http://a/gone"])
        #expect(diff.changed.count == 1 && diff.changed[0].a.index == 1 && diff.changed[0].b.index == 2)
        guard case .bytes(let x, let y, let first)? = diff.changed[0].body else { Issue.record("no body change"); return }
        #expect(x == 1 && y == 1 && first == 0)
        #expect(!diff.isEqual)
    }

    @Test func headersStatusAndTimingUnderTheIgnores() {
        let a = [exchange(0, "http://a/x", headers: [("date", "Mon"), ("etag", "1")], ms: 10)]
        let b = [exchange(0, "http://a/x", status: 201, headers: [("Date", "Tue"), ("etag", "1")], ms: 500)]
        var options = RecordingDiff.Options()
        var diff = RecordingDiff(a, b, options: options)
        #expect(diff.changed.first?.headers.map(\.name) == ["date"] && diff.changed.first?.status?.b == 201)
        #expect(diff.changed.first?.timing == nil, "timing is not compared unless asked")
        options.ignoredHeaders = ["date"]
        options.timingThreshold = 100
        diff = RecordingDiff(a, b, options: options)
        #expect(diff.changed.first?.headers.isEmpty == true && diff.changed.first?.timing?.b == 500)
        let report = DiffReport.json(diff)
        let parsed = try? JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any]
        #expect(parsed?["equal"] as? Bool == false && (parsed?["changed"] as? [Any])?.count == 1)
        #expect(DiffReport.table(diff).contains("status: 200 → 201"))
    }

    @Test func aHARFileIsReadAndABadOneNamesItsEntry() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("recordings-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let har = folder.appendingPathComponent("a.har")
        try Data(#"""
        {"log":{"version":"1.2","entries":[{"startedDateTime":"2026-01-01T00:00:00Z","time":12,
         "request":{"method":"POST","url":"https://a.test/v1","headers":[{"name":"Accept","value":"*/*"}]},
         "response":{"status":200,"headers":[{"name":"Content-Type","value":"application/json"}],
                     "content":{"size":7,"mimeType":"application/json","text":"eyJhIjoxfQ==","encoding":"base64"}}}]}}
        """#.utf8).write(to: har)
        let entries = try RecordingReader.read(har.path)
        let entry = try #require(entries.first)
        #expect(entries.count == 1)
        #expect(entry.method == "POST" && entry.url == "https://a.test/v1" && entry.status == 200)
        #expect(entry.responseBody == .bytes(Array(#"{"a":1}"#.utf8)) && entry.requestHeaders.first?.name == "accept")
        let bad = folder.appendingPathComponent("bad.har")
        try Data(#"{"log":{"entries":[{"request":{}}]}}"#.utf8).write(to: bad)
        #expect(throws: RecordingError.self) { try RecordingReader.read(bad.path) }
        do { _ = try RecordingReader.read(bad.path) } catch { #expect(error.entry == 0) }
        // An empty file is neither, and is refused (read by hand: FileManager leaks its buffer for one).
        let empty = folder.appendingPathComponent("empty.har")
        try Data().write(to: empty)
        do { _ = try RecordingReader.read(empty.path) } catch { #expect(error.message.contains("neither")) }
        #expect(throws: RecordingError.self) { try RecordingReader.read(folder.appendingPathComponent("none").path) }
    }
}

@Suite struct RecordingMatcherTests {
    private func log(_ lines: [String]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("matcher-\(getpid())-\(lines.count).jsonl").path
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func record(_ id: Int, _ url: String, status: Int) -> String {
        #"{"v":1,"event":"exchange","id":\#(id),"kind":"http","method":"GET","url":"\#(url)","status":\#(status),"bytes":{"response_body":0},"timings_ms":{"wait":5}}"#
    }

    @Test func repeatModesAndIgnoredQueryParameters() throws {
        let path = try log([record(1, "http://a.test/x?ts=1", status: 201), record(2, "http://a.test/x?ts=2", status: 202),
                            #"{"v":1,"event":"exchange","kind":"admin","method":"GET","url":"http://l/","status":200}"#])
        defer { try? FileManager.default.removeItem(atPath: path) }
        var settings = SimulateSettings()
        settings.recordings = [path]
        settings.mode = .simulate
        settings.ignoreQuery = ["ts"]
        func statuses(_ matcher: RecordingMatcher, _ count: Int) -> [Int] {
            (0..<count).map { _ in
                guard case .answer(let answer) = matcher.match(method: "GET", url: "http://a.test/x?ts=9", headers: [], body: nil)
                else { return 0 }
                return answer.status
            }
        }
        #expect(statuses(try RecordingMatcher(settings: settings), 3) == [201, 202, 202])
        settings.repetition = .cycle
        #expect(statuses(try RecordingMatcher(settings: settings), 3) == [201, 202, 201])
        settings.repetition = .first
        #expect(statuses(try RecordingMatcher(settings: settings), 2) == [201, 201])
        let matcher = try RecordingMatcher(settings: settings)
        #expect(matcher.count == 2, "the proxy's own pages are not recordings")
        guard case .miss(let closest) = matcher.match(method: "GET", url: "http://a.test/y", headers: [], body: nil) else {
            Issue.record("matched")
            return
        }
        #expect(closest?.hasPrefix("GET http://a.test/x?ts=1") == true)
    }
}

@Suite struct RecordingFolderTests {
    @Test func captureFilesAreFoundBesideAMovedLog() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moved-\(getpid())")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("capture"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("moved".utf8).write(to: folder.appendingPathComponent("capture/7.response"))
        try Data("relative".utf8).write(to: folder.appendingPathComponent("8.response"))
        let log = folder.appendingPathComponent("rec.jsonl")
        try Data("""
        {"v":1,"event":"exchange","id":7,"kind":"http","method":"GET","url":"http://a/1","status":200,"capture":{"response":"/gone/elsewhere/7.response"}}
        {"v":1,"event":"exchange","id":8,"kind":"http","method":"GET","url":"http://a/2","status":200,"capture":{"response":"8.response"}}
        """.utf8).write(to: log)
        let exchanges = try RecordingReader.read(log.path)
        #expect(exchanges.map { BodyComparison.load($0.responseBody) } == [Array("moved".utf8), Array("relative".utf8)])
    }
}
