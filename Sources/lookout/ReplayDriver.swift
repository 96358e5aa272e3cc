import Dispatch
import Foundation
import Lookout
import LookoutRecordings

/// Sends a recording's requests in the order of a `ReplaySchedule`, at most `concurrency` at once
/// and `rate` a second, with the cookie jar of `--session`; waits for every answer.
struct ReplayDriver {
    let exchanges: [RecordedExchange]
    let schedule: ReplaySchedule
    let concurrency: Int
    let rate: Double
    let session: Bool

    init(exchanges: [RecordedExchange], schedule: ReplaySchedule, concurrency: Int, rate: Double, session: Bool) {
        self.exchanges = exchanges
        self.schedule = schedule
        self.concurrency = concurrency
        self.rate = rate
        self.session = session
    }

    /// Sends each request through `send` when the schedule allows it; `record` sees each answer.
    func run(send: (ReplayRequest, @escaping @Sendable (Result<ReplayResponse, ReplayRefusal>) -> Void) -> Void,
             record: @escaping @Sendable (RecordedExchange, Result<ReplayResponse, ReplayRefusal>) -> Void) {
        let state = ReplayDriverState(schedule: schedule)
        let start = DispatchTime.now()
        for (number, position) in schedule.sendingOrder.enumerated() {
            state.waitUntilReady(position, concurrency: concurrency)
            if rate > 0 {
                let due = start.uptimeNanoseconds + UInt64(Double(number) / rate * 1e9)
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
            }
            let exchange = exchanges[position]
            var request = ReplayCommand.request(exchange)
            let host = URLComponents(string: exchange.url)?.host ?? ""
            if session { request.headers = state.cookies { $0.apply(to: request.headers, host: host) } }
            let keepsCookies = session
            send(request) { result in
                if keepsCookies, case .success(let response) = result {
                    state.storeCookies(response.headers, host: host)
                }
                record(exchange, result)
                state.answered(position)
            }
        }
        state.waitForAll()
    }
}

/// The schedule's progress and the jar, shared between the sending thread and the answers.
final class ReplayDriverState: @unchecked Sendable {  // guarded by `condition`
    private let condition = NSCondition()
    private var schedule: ReplaySchedule
    private var inFlight = 0
    private var jar = ReplayCookieJar()

    init(schedule: ReplaySchedule) {
        self.schedule = schedule
    }

    /// Blocks until the request at `position` may start and a place is free, then takes the place.
    func waitUntilReady(_ position: Int, concurrency: Int) {
        condition.lock()
        while !(schedule.isReady(position) && inFlight < concurrency) { condition.wait() }
        inFlight += 1
        condition.unlock()
    }

    func answered(_ position: Int) {
        condition.lock()
        schedule.answer(position)
        inFlight -= 1
        condition.broadcast()
        condition.unlock()
    }

    func waitForAll() {
        condition.lock()
        while inFlight > 0 { condition.wait() }
        condition.unlock()
    }

    func cookies<T>(_ body: (ReplayCookieJar) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(jar)
    }

    func storeCookies(_ headers: [(name: String, value: String)], host: String) {
        condition.lock()
        jar.store(headers, host: host, nowSeconds: Int64(Date().timeIntervalSince1970))
        condition.unlock()
    }
}
