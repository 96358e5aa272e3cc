import Dispatch
import LookoutIO
import LookoutModel
import LookoutUpstream

/// Passes bytes to a sink no faster than a rate: a token bucket refilled continuously and holding at
/// most `burst` bytes (20 ms of the rate), so bytes leave in small, even slices. Pacing is
/// backpressure, not buffering: what the rate does not allow yet — at most the one write the
/// producer handed over — waits here while the producer is told to stop, and leaves from a timer.
///
/// The producer stops when `send` returns false, and goes on when its owner's `sinkDidDrain()`
/// returns true (the sink had been backed up) or when `onReady` is called (the rate let the
/// waiting bytes go). `onReady` always comes from a timer, never on the stack of a call into here.
final class PacedSender: @unchecked Sendable {  // confined to the owner's loop queue
    private let loop: EventLoop
    /// 0 = unlimited (the sender then only holds bytes until `hold(for:)` has passed).
    private let bytesPerSecond: Double
    private let burst: Double
    private var tokens: Double
    private var lastRefill: UInt64
    /// Nothing leaves before this (monotonic nanoseconds).
    private var notBefore: UInt64 = 0
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var sinkBlocked = false
    private var timerGeneration = 0
    private var timerArmed = false
    private var flushedWork: [() -> Void] = []
    /// The owner ended: bytes handed over later (from a sink call that ended it) are dropped.
    private var isCancelled = false
    private let sink: (UnsafeRawBufferPointer) -> Bool
    var onReady: () -> Void = {}

    init(loop: EventLoop, bytesPerSecond: Double, sink: @escaping (UnsafeRawBufferPointer) -> Bool) {
        self.loop = loop
        self.bytesPerSecond = bytesPerSecond
        // 20 ms of the rate, at least one kilobyte (a slice worth a wake-up), at most 256 KiB.
        self.burst = bytesPerSecond > 0 ? min(max(bytesPerSecond * 0.02, 1024), 256 * 1024) : .infinity
        self.tokens = burst
        self.lastRefill = DispatchTime.now().uptimeNanoseconds
        self.sink = sink
    }

    /// Bytes handed over that have not reached the sink yet.
    var isHolding: Bool { pendingOffset < pending.count }

    /// Nothing more leaves for `seconds` from now (a stall).
    func hold(for seconds: Double) {
        notBefore = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
    }

    /// Takes `bytes`; false: the producer waits (see the type's comment).
    func send(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !isCancelled else { return false }
        if isHolding || sinkBlocked {
            pending.append(contentsOf: bytes)
            return false
        }
        let allowed = allowance(now: DispatchTime.now().uptimeNanoseconds, wanted: bytes.count)
        if allowed > 0 {
            take(allowed)
            if !sink(UnsafeRawBufferPointer(rebasing: bytes[..<allowed])) { sinkBlocked = true }
        }
        if allowed < bytes.count && !isCancelled {
            pending = Array(UnsafeRawBufferPointer(rebasing: bytes[allowed...]))
            pendingOffset = 0
            if !sinkBlocked { armTimer() }
            return false
        }
        return !sinkBlocked
    }

    /// The sink drained after refusing more: sends what waits; true when the producer may go on now.
    func sinkDidDrain() -> Bool {
        sinkBlocked = false
        return isHolding ? flush() : flushedWork.isEmpty
    }

    /// Runs `work` once every byte handed over has reached the sink (now, if none waits).
    func whenFlushed(_ work: @escaping () -> Void) {
        if isHolding {
            flushedWork.append(work)
        } else {
            work()
        }
    }

    /// Drops what waits and stops the timer (the exchange or tunnel ended another way).
    func cancel() {
        isCancelled = true
        pending = []
        pendingOffset = 0
        flushedWork = []
        timerGeneration += 1
        timerArmed = false
    }

    // MARK: - Pacing

    /// How many of `wanted` bytes may leave now.
    private func allowance(now: UInt64, wanted: Int) -> Int {
        guard now >= notBefore else { return 0 }
        guard bytesPerSecond > 0 else { return wanted }
        tokens = min(burst, tokens + Double(now &- lastRefill) / 1e9 * bytesPerSecond)
        lastRefill = now
        return min(wanted, Int(tokens))
    }

    private func take(_ count: Int) {
        if bytesPerSecond > 0 { tokens -= Double(count) }
    }

    /// Sends as much of `pending` as the rate allows; then waits for the sink or the rate, or is
    /// done: runs what waited for the flush, or returns true (the producer may go on).
    private func flush() -> Bool {
        while isHolding && !sinkBlocked {
            let remaining = pending.count - pendingOffset
            let allowed = allowance(now: DispatchTime.now().uptimeNanoseconds, wanted: remaining)
            guard allowed > 0 else {
                armTimer()
                return false
            }
            take(allowed)
            let accepted = pending.withUnsafeBytes { sink(UnsafeRawBufferPointer(rebasing: $0[pendingOffset..<(pendingOffset + allowed)])) }
            pendingOffset += allowed
            if !accepted { sinkBlocked = true }
        }
        guard !isHolding else { return false }
        pending = []
        pendingOffset = 0
        if sinkBlocked { return false }  // the owner's sinkDidDrain goes on from here
        guard flushedWork.isEmpty else {
            let work = flushedWork
            flushedWork = []
            for item in work { item() }
            return false
        }
        return true
    }

    /// Wakes when the next slice (or the end of a hold) is due.
    private func armTimer() {
        guard !timerArmed, !isCancelled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        var delay = now < notBefore ? Double(notBefore - now) / 1e9 : 0
        if bytesPerSecond > 0 {
            let slice = min(Double(pending.count - pendingOffset), burst)
            delay = max(delay, (slice - tokens) / bytesPerSecond)
        }
        timerArmed = true
        let generation = timerGeneration
        loop.execute(after: max(delay, 0.001)) { [weak self] in
            guard let self, generation == timerGeneration else { return }
            timerArmed = false
            if flush() { onReady() }
        }
    }
}
