import Testing
@testable import LookoutRecordings

/// The replay order without a socket: which requests wait for which, and the cookie jar.
@Suite struct ReplayScheduleTests {
    /// An exchange that started and ended at the given milliseconds, on a connection.
    private func exchange(_ index: Int, _ start: Int64?, _ end: Int64?, on connection: String? = nil,
                          http2: Bool = false) -> RecordedExchange {
        var made = RecordedExchange(index: index, method: "GET", url: "http://h/\(index)", status: 200, requestHeaders: [],
                                    responseHeaders: [], responseBody: .none, totalMilliseconds: nil)
        made.startMicroseconds = start.map { $0 * 1000 }
        made.endMicroseconds = end.map { $0 * 1000 }
        made.connection = connection
        made.isHTTP2 = http2
        made.file = "rec"
        return made
    }

    /// Sends whatever is ready in order, then answers the oldest in flight; returns the waves.
    private func waves(_ schedule: ReplaySchedule) -> [[Int]] {
        var schedule = schedule
        var pending = schedule.sendingOrder[...]
        var result: [[Int]] = []
        while !pending.isEmpty {
            var wave: [Int] = []
            while let next = pending.first, schedule.isReady(next) { wave.append(next); pending.removeFirst() }
            #expect(!wave.isEmpty, "a request can always start once the earlier ones are answered")
            if wave.isEmpty { break }
            result.append(wave)
            for position in wave { schedule.answer(position) }
        }
        return result
    }

    @Test func sequentialRequestsWaitAndOverlappingOnesGoTogether() throws {
        // 0 and 1 overlap; 2 starts after both ended; 3 after 2 ended; listed out of order.
        let recording = [exchange(0, 0, 50), exchange(1, 10, 60), exchange(2, 70, 80), exchange(3, 90, 95)].reversed()
        let schedule = try ReplaySchedule(Array(recording), order: .recorded)
        #expect(schedule.sendingOrder == [3, 2, 1, 0])
        #expect(waves(schedule) == [[3, 2], [1], [0]])
    }

    @Test func aRequestWaitsOnlyForWhatEndedBeforeItStarted() throws {
        // 1 starts while 0 is in flight (a long download beside short requests) and need not wait.
        let schedule = try ReplaySchedule([exchange(0, 0, 1000), exchange(1, 10, 20), exchange(2, 30, 40)], order: .recorded)
        var state = schedule
        #expect(state.isReady(0) && state.isReady(1) && !state.isReady(2))
        state.answer(1)
        #expect(state.isReady(2), "2 needs only 1, which ended before it started")
    }

    @Test func orderNoneSendsByStartWithoutWaiting() throws {
        let schedule = try ReplaySchedule([exchange(0, 50, 60), exchange(1, 0, 10)], order: .none)
        #expect(schedule.sendingOrder == [1, 0])
        #expect(schedule.isReady(0) && schedule.isReady(1))
    }

    @Test func unorderableRecordingsAreRefused() {
        #expect(throws: RecordingError.self) { try ReplaySchedule([exchange(0, 0, 10), exchange(1, nil, nil)], order: .recorded) }
        #expect(throws: RecordingError.self) {
            try ReplaySchedule([exchange(0, 0, 100, on: "7"), exchange(1, 50, 60, on: "7")], order: .recorded)
        }
        // HTTP/2 streams on one connection overlap by design.
        #expect(throws: Never.self) {
            try ReplaySchedule([exchange(0, 0, 100, on: "7", http2: true), exchange(1, 50, 60, on: "7", http2: true)], order: .recorded)
        }
    }

    @Test func theJarReplacesRecordedCookiesOfTheSameNameForThatHostOnly() {
        var jar = ReplayCookieJar()
        jar.store([("Set-Cookie", "sid=new; Path=/; HttpOnly"), ("Set-Cookie", "theme=dark")], host: "a.test", nowSeconds: 0)
        let sent = jar.apply(to: [("Accept", "*/*"), ("Cookie", "sid=old; lang=en")], host: "a.test")
        #expect(sent.map(\.name) == ["Accept", "Cookie"])
        #expect(sent.last?.value == "sid=new; lang=en; theme=dark")
        #expect(jar.apply(to: [("Cookie", "sid=old")], host: "b.test").last?.value == "sid=old")
        jar.store([("Set-Cookie", "sid=gone; Max-Age=0"), ("Set-Cookie", "theme=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT")],
                  host: "a.test", nowSeconds: 100)
        #expect(jar.apply(to: [("Cookie", "sid=old")], host: "a.test").last?.value == "sid=old", "expired cookies leave the jar")
    }

    @Test func harConnectionFieldsAsBrowsersWriteThem() {
        for version in ["HTTP/2", "HTTP/2.0", "h2", "h3", "http/3"] { #expect(RecordingReader.isMultiplexed(version), "\(version)") }
        for version in ["HTTP/1.1", "http/1.0", ""] { #expect(!RecordingReader.isMultiplexed(version), "\(version)") }
        #expect(RecordingReader.connectionID("348", url: "https://a.test/x") == "348")
        #expect(RecordingReader.connectionID("443", url: "https://a.test/x") == nil, "Firefox's port is no connection id")
        #expect(RecordingReader.connectionID("8080", url: "http://a.test:8080/x") == nil)
    }
}
