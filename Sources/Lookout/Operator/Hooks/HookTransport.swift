import Dispatch
import LookoutModel

/// Where a hook's calls go: a kept process (`CommandHook`) or an HTTP endpoint (`HTTPHook`). Each
/// bounds the calls in flight (`concurrency`) and those waiting (`queue_limit`), and ends every
/// call within `timeout_ms` of its start, with a reply or a failure.
package protocol HookTransport: AnyObject, Sendable {
    /// Sends one call; `completion` runs once, on any thread, with the reply's bytes or why there is none.
    func call(_ message: [UInt8], key: HookCallKey, completion: @escaping @Sendable (Result<[UInt8], HookFailure>) -> Void)
    /// Ends the hook (the session is shutting down): calls fail, a process is stopped.
    func stop()
}

/// Which exchange and phase a call is about: a reply that names them is matched by them.
package struct HookCallKey: Equatable, Sendable {
    let id: UInt64
    let phase: String

    package init(id: UInt64, phase: String) {
        self.id = id
        self.phase = phase
    }
}

/// Why a call got no usable reply.
package struct HookFailure: Error, Sendable {
    package let message: String
    init(_ message: String) { self.message = message }
}

/// Calls waiting for a place, and the places in flight: the bookkeeping both transports share.
/// Confined to the transport's queue.
struct HookCallQueue {
    final class Call: @unchecked Sendable {  // confined to the transport's queue
        let message: [UInt8]
        let key: HookCallKey
        private var completion: (@Sendable (Result<[UInt8], HookFailure>) -> Void)?

        init(_ message: [UInt8], key: HookCallKey, completion: @escaping @Sendable (Result<[UInt8], HookFailure>) -> Void) {
            self.message = message
            self.key = key
            self.completion = completion
        }

        /// The first end wins (a reply, a timeout, a failure); later ones are dropped.
        func end(_ result: Result<[UInt8], HookFailure>) {
            guard let completion else { return }
            self.completion = nil
            completion(result)
        }

        var isEnded: Bool { completion == nil }
    }

    let concurrency: Int
    let queueLimit: Int
    /// Sent and not answered yet, oldest first (a timed-out call stays until its reply comes or
    /// the hook ends: replies without an id are matched in order).
    var inFlight: [Call] = []
    var waiting: [Call] = []

    /// Where a new call goes: sent now, queued, or refused.
    enum Admission { case send, queued, refused }

    mutating func admit(_ call: Call) -> Admission {
        if inFlight.count < concurrency {
            inFlight.append(call)
            return .send
        }
        guard waiting.count < queueLimit else { return .refused }
        waiting.append(call)
        return .queued
    }

    /// The call a reply answers: the one it names, else the oldest.
    mutating func take(for key: HookCallKey?) -> Call? {
        if let key, let index = inFlight.firstIndex(where: { $0.key == key }) { return inFlight.remove(at: index) }
        return inFlight.isEmpty ? nil : inFlight.removeFirst()
    }

    /// The next waiting calls that fit in flight now (the timed-out ones are dropped).
    mutating func next() -> [Call] {
        waiting.removeAll { $0.isEnded }
        var ready: [Call] = []
        while inFlight.count < concurrency, !waiting.isEmpty {
            let call = waiting.removeFirst()
            inFlight.append(call)
            ready.append(call)
        }
        return ready
    }

    /// Ends every call with `failure` (the hook went away).
    mutating func failAll(_ failure: HookFailure) {
        for call in inFlight + waiting { call.end(.failure(failure)) }
        inFlight = []
        waiting = []
    }

    /// Ends `call` with a timeout if nothing ended it by then.
    static func timeout(_ call: Call, after milliseconds: Int, on queue: DispatchQueue) {
        queue.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            call.end(.failure(HookFailure("no reply within \(milliseconds) ms (timeout_ms)")))
        }
    }
}
