import Testing
@testable import Lookout
@testable import LookoutModel

private final class FakeEntry: TaskMapIdentifiable {
    let id: UInt64
    init(_ id: UInt64) { self.id = id }
}

@Suite struct RequestTaskMapTests {
    @Test func mapsBothWays() {
        let map = RequestTaskMap<FakeEntry, FakeEntry>()
        let request = FakeEntry(1), task = FakeEntry(10)
        map.add(task, for: request)
        #expect(map.request(forTask: 10) === request)
        #expect(map.task(forRequest: 1) === task)
        #expect(map.count == 1)
    }

    @Test func forgetsOnlyAfterCompletionAndMetrics() {
        let map = RequestTaskMap<FakeEntry, FakeEntry>()
        let request = FakeEntry(1), task = FakeEntry(10)
        map.add(task, for: request)
        #expect(map.disassociateIfNecessaryAfterCompleting(task) == false)
        #expect(map.request(forTask: 10) === request, "still reachable until metrics arrive")
        #expect(map.disassociateIfNecessaryAfterGatheringMetrics(task) == true)
        #expect(map.request(forTask: 10) == nil)
        #expect(map.task(forRequest: 1) == nil)
        #expect(map.isEmpty)
    }

    @Test func forgetsInEitherOrder() {
        let map = RequestTaskMap<FakeEntry, FakeEntry>()
        let request = FakeEntry(2), task = FakeEntry(20)
        map.add(task, for: request)
        #expect(map.disassociateIfNecessaryAfterGatheringMetrics(task) == false)
        #expect(map.disassociateIfNecessaryAfterCompleting(task) == true)
        #expect(map.isEmpty)
    }

    @Test func aRetryMapsANewTaskAfterTheOldOneIsForgotten() {
        let map = RequestTaskMap<FakeEntry, FakeEntry>()
        let request = FakeEntry(3), first = FakeEntry(30), second = FakeEntry(31)
        map.add(first, for: request)
        map.disassociateIfNecessaryAfterGatheringMetrics(first)
        map.disassociateIfNecessaryAfterCompleting(first)
        map.add(second, for: request)
        #expect(map.task(forRequest: 3) === second)
        #expect(map.request(forTask: 30) == nil)
    }

    @Test func keepsSeveralExchangesApart() {
        let map = RequestTaskMap<FakeEntry, FakeEntry>()
        let requests = (1...50).map { FakeEntry(UInt64($0)) }
        let tasks = (1...50).map { FakeEntry(UInt64(1000 + $0)) }
        for (request, task) in zip(requests, tasks) { map.add(task, for: request) }
        for (request, task) in zip(requests, tasks) {
            #expect(map.request(forTask: task.id) === request)
        }
        for task in tasks where task.id % 2 == 0 {
            map.disassociateIfNecessaryAfterCompleting(task)
            map.disassociateIfNecessaryAfterGatheringMetrics(task)
        }
        #expect(map.count == 25)
    }
}
