#if canImport(Glibc)
import Glibc
#endif
import CLookoutSocket
import Dispatch
import LookoutAdmin
import LookoutModel

/// A hook that is a long-running program: started once and kept, one call per line on its stdin,
/// one reply per line on its stdout (matched by the `id` and `phase` it names, else in order). If
/// it exits, its calls fail (`on_failure`) and it is started again after a backoff that doubles
/// up to 10 s; `hook.didRestart` says so. Its stderr is Lookout's.
final class CommandHook: HookTransport, @unchecked Sendable {  // state confined to `queue`
    private let settings: HookSettings
    private let arguments: [String]
    private let directory: String
    private let queue: DispatchQueue
    /// Blocking writes to the program's stdin happen here, in call order.
    private let writer: DispatchQueue
    private let restarted: @Sendable (_ reason: String, _ backoff: Double) -> Void
    private var calls: HookCallQueue
    private var process: pid_t = 0
    private var input: Int32 = -1
    /// Counts starts, so that what a previous process left behind is told apart.
    private var generation = 0
    private var backoff = 0.2
    private var stopped = false

    init(settings: HookSettings, arguments: [String], directory: String,
         restarted: @escaping @Sendable (_ reason: String, _ backoff: Double) -> Void) {
        self.settings = settings
        self.arguments = arguments
        self.directory = directory
        self.restarted = restarted
        queue = DispatchQueue(label: "lookout.hook.\(settings.name)")
        writer = DispatchQueue(label: "lookout.hook.\(settings.name).stdin")
        calls = HookCallQueue(concurrency: settings.concurrency, queueLimit: settings.queueLimit)
        queue.async { self.launch() }
    }

    func call(_ message: [UInt8], key: HookCallKey, completion: @escaping @Sendable (Result<[UInt8], HookFailure>) -> Void) {
        let call = HookCallQueue.Call(message, key: key, completion: completion)
        queue.async { [self] in
            guard process != 0, !stopped else {
                call.end(.failure(HookFailure(stopped ? "the session is shutting down" : "its program is not running (restarting)")))
                return
            }
            HookCallQueue.timeout(call, after: settings.timeoutMilliseconds, on: queue)
            switch calls.admit(call) {
            case .send: send(call)
            case .queued: break
            case .refused:
                call.end(.failure(HookFailure("\(settings.queueLimit) calls wait already (queue_limit)")))
            }
        }
    }

    func stop() {
        queue.async { [self] in
            stopped = true
            calls.failAll(HookFailure("the session is shutting down"))
            // The end of its stdin says there are no more calls; the signal is for a program
            // that does not read to the end.
            let fd = input
            input = -1
            if fd >= 0 { writer.async { close(fd) } }
            if process != 0 { kill(process, SIGTERM) }
        }
    }

    // MARK: - The process

    private func launch() {
        guard !stopped else { return }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: Int32 = 0, toChild: Int32 = -1, output: Int32 = -1
        let error = lookout_spawn_piped(&argv, directory, &pid, &toChild, &output)
        guard error == 0 else {
            return relaunch(reason: "cannot start \(arguments[0]): \(String(cString: strerror(error)))")
        }
        process = pid
        input = toChild
        generation += 1
        let current = generation
        let started = DispatchTime.now()
        let replies = output
        DispatchQueue(label: "lookout.hook.\(settings.name).stdout").async { [self] in
            readReplies(from: replies, generation: current)
            close(replies)
            queue.async { self.exited(generation: current, started: started) }
        }
    }

    /// Reads lines until the program closes its stdout; each goes to the call it answers.
    private func readReplies(from fd: Int32, generation: Int) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var line: [UInt8] = []
        var overflowing = false
        let limit = settings.maxReplyBytes
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            var start = 0
            while let newline = buffer[start..<count].firstIndex(of: 0x0A) {
                if !overflowing { line += buffer[start..<newline] }
                let complete = line
                let tooLong = overflowing
                line = []
                overflowing = false
                start = newline + 1
                queue.async { self.replied(complete, tooLong: tooLong, generation: generation) }
            }
            if !overflowing { line += buffer[start..<count] }
            if line.count > limit {
                overflowing = true
                line = []
            }
        }
    }

    private func replied(_ line: [UInt8], tooLong: Bool, generation: Int) {
        guard generation == self.generation else { return }
        let key = tooLong ? nil : HookProtocol.replyKey(line).map { HookCallKey(id: $0.id, phase: $0.phase) }
        if let call = calls.take(for: key) {
            call.end(tooLong ? .failure(HookFailure("its reply is longer than \(settings.maxReplyBytes) bytes")) : .success(line))
        }
        for call in calls.next() { send(call) }
    }

    private func send(_ call: HookCallQueue.Call) {
        let fd = input
        let bytes = call.message + [0x0A]
        writer.async {
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else {
                    // The program is gone: its stdout ends too, and `exited` fails the call.
                    return
                }
                offset += written
            }
        }
    }

    private func exited(generation: Int, started: DispatchTime) {
        guard generation == self.generation else { return }
        var status: Int32 = 0
        if process != 0 { waitpid(process, &status, 0) }
        process = 0
        let fd = input
        input = -1
        if fd >= 0 { writer.async { close(fd) } }
        let code = (status >> 8) & 0xFF, signal = status & 0x7F
        let reason = signal != 0 ? "its program was killed by signal \(signal)" : "its program exited with status \(code)"
        calls.failAll(HookFailure(reason))
        // A program that ran a while starts again soon; one that keeps dying waits longer each time.
        if DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds > 10_000_000_000 { backoff = 0.2 }
        relaunch(reason: reason)
    }

    private func relaunch(reason: String) {
        guard !stopped else { return }
        let delay = backoff
        backoff = min(backoff * 2, 10)
        restarted(reason, delay * 1000)
        queue.asyncAfter(deadline: .now() + delay) { self.launch() }
    }
}
