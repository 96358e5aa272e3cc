import Dispatch
import Synchronization
import Testing
@testable import Lookout

/// The bookkeeping of a hook's calls: places in flight, the bounded wait, replies matched by the
/// exchange they name or in order, and chunked HTTP answers.
@Suite struct HookCallQueueTests {
    /// How each call ended, in order.
    final class Ends: Sendable {
        private let lock = Mutex<[String]>([])
        func add(_ entry: String) { lock.withLock { $0.append(entry) } }
        func withLock<T>(_ body: ([String]) -> T) -> T { lock.withLock { body($0) } }
    }

    private func call(_ id: UInt64, _ ends: Ends) -> HookCallQueue.Call {
        HookCallQueue.Call([], key: HookCallKey(id: id, phase: "request")) { result in
            ends.add("\(id):" + ((try? result.get()).map { String(decoding: $0, as: UTF8.self) } ?? "failed"))
        }
    }

    @Test func placesAndTheBoundedWait() {
        let ends = Ends()
        var queue = HookCallQueue(concurrency: 1, queueLimit: 1)
        let (a, b, c) = (call(1, ends), call(2, ends), call(3, ends))
        #expect(queue.admit(a) == .send && queue.admit(b) == .queued && queue.admit(c) == .refused)
        #expect(queue.take(for: nil) === a, "a reply without an id answers the oldest")
        #expect(queue.next().map(\.key.id) == [2])
        a.end(Result<[UInt8], HookFailure>.success(Array("ok".utf8)))
        a.end(Result<[UInt8], HookFailure>.failure(HookFailure("late")))
        #expect(ends.withLock { $0 } == ["1:ok"], "the first end wins")
        queue.failAll(HookFailure("gone"))
        #expect(ends.withLock { $0 } == ["1:ok", "2:failed"])
    }

    @Test func repliesNamingTheirExchangeFindItOutOfOrder() {
        let ends = Ends()
        var queue = HookCallQueue(concurrency: 4, queueLimit: 0)
        let calls = (1...3).map { call($0, ends) }
        for c in calls { _ = queue.admit(c) }
        #expect(queue.take(for: HookCallKey(id: 3, phase: "request")) === calls[2])
        #expect(queue.take(for: HookCallKey(id: 9, phase: "request")) === calls[0], "an unknown id falls back to order")
        #expect(queue.inFlight.map(\.key.id) == [2])
    }

    @Test func timedOutWaitingCallsAreDropped() async throws {
        let ends = Ends()
        var queue = HookCallQueue(concurrency: 1, queueLimit: 2)
        let (a, b) = (call(1, ends), call(2, ends))
        _ = queue.admit(a)
        _ = queue.admit(b)
        let dispatch = DispatchQueue(label: "test")
        HookCallQueue.timeout(b, after: 10, on: dispatch)
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(ends.withLock { $0 } == ["2:failed"])
        _ = queue.take(for: nil)
        #expect(queue.next().isEmpty, "the timed-out call is not sent")
    }

    @Test func chunkedAnswersAreMadeWhole() {
        #expect(HTTPHook.dechunk(Array("5\r\nhello\r\n1;x=y\r\n!\r\n0\r\n\r\n".utf8)) == Array("hello!".utf8))
        #expect(HTTPHook.dechunk(Array("5\r\nhel".utf8)) == nil)
        #expect(HTTPHook.dechunk(Array("zz\r\n".utf8)) == nil)
    }
}
