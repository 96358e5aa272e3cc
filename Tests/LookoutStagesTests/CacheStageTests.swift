import Foundation
import HTTPTypes
import Testing
@testable import Lookout
@testable import LookoutStages
import LookoutHTTP
import LookoutModel

/// The cache stage through the test handle, on a store in a fresh directory: a miss goes upstream
/// and is stored as it streams; the next request is answered from the store (RFC 9111).
@Suite struct CacheStageTests {
    @Test func aMissIsStoredAsItPassesAndTheNextRequestIsAHit() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-cache-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let settings = CacheSettings(directory: directory)
        let shared = try SharedCache(settings: settings, handler: ResponseCacher(rules: settings.rules),
                                     monitor: CompositeEventMonitor(monitors: [], mailboxLimit: 16))
        let url = "http://origin.test/c"

        let first = TestStageHandle(.get, url)
        let miss = CacheStage(shared: shared, validatesAlways: false, recordsWanted: true)
        guard case .proceed = miss.requestHead(first) else { Issue.record("a cold store answered"); return }
        let fields: HTTPFields = [.cacheControl: "max-age=60", .contentLength: "5", .contentType: "text/plain",
                                  .date: HTTPDate.format(unixSeconds: Int64(Date().timeIntervalSince1970))]
        let head = ResponseHead(status: 200, reasonPhrase: "OK", version: .http1_1, headerFields: fields,
                                framing: .contentLength(5), keepAlive: true, headLength: 0)
        miss.attemptStarts(exchange: first)
        #expect(noPlan(miss.attemptResponse(head, attempt: first.attempt(), exchange: first)))
        var relayed = first.response(200, fields)
        _ = miss.responseHead(&relayed, exchange: first)
        Array("hello".utf8).withUnsafeBytes { miss.responseBody($0, exchange: first) }
        miss.responseEnd(trailers: nil, exchange: first)
        miss.exchangeEnd(first)
        #expect(first.summary.cache?.status == "miss")
        #expect(first.summary.cache?.stored == true)

        let second = TestStageHandle(.get, url)
        let hit = CacheStage(shared: shared, validatesAlways: false, recordsWanted: true)
        let verdict = hit.requestHead(second)
        guard case .answer(let answer) = verdict else { Issue.record("not answered from the store: \(verdict) \(second.eventNames)"); return }
        #expect(answer.status == 200 && answer.fields[.contentType] == "text/plain")
        hit.exchangeEnd(second)
        #expect(second.summary.cache?.status == "hit")
    }
}
