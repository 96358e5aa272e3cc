import CLookoutSocket
import Glibc

/// Whether a poll thread that has run out of work polls a little longer before it sleeps
/// (`event_loop_spin_us`).
///
/// A thread asleep in `epoll_wait` is woken by the kernel when a socket becomes ready: an
/// inter-processor interrupt, and for an idle CPU its way back out of the idle state — on this
/// kind of virtual machine the largest part of a hop's latency. When a client sends one request
/// at a time, every request pays that twice in the proxy (its arrival, the origin's answer), on
/// top of the hops the client and origin pay anyway. A thread still polling when the bytes
/// arrive pays neither.
///
/// Polling costs a CPU other threads may want, so it happens only when it can pay off and cannot
/// starve anyone:
/// - the thread's last `denseSleeps` sleeps were all short (under `denseGapFactor` spins):
///   traffic dense enough that something will be ready soon. One long sleep and the thread
///   sleeps at once until two short ones in a row again, so an idle or lightly used proxy never
///   polls — not even in the short wait for an origin's answer between a sparse client's
///   requests;
/// - threads on the machine seldom waited for a CPU: the kernel's CPU pressure (PSI, "some" over
///   the last `pressureInterval`) stayed under `pressureLimit`. A polling CPU never goes idle, so
///   the scheduler would not move waiting threads to it: under load the spin is off. Without
///   `/proc/pressure/cpu` it is always off. While polling, the thread yields between polls, so a
///   thread that becomes runnable on its CPU runs at once; a yield that lasts a whole spin means
///   threads want this CPU for full slices, and the spin is off until the next reading.
///
/// A value type the poll thread owns; the decisions take the clock and the pressure readings as
/// arguments so that they can be tested without a kernel.
struct PollSpin {
    /// How long one spin polls before the thread sleeps; 0 = never spin.
    let nanoseconds: Int64
    /// A sleep shorter than this many spins counts as short.
    static let denseGapFactor: Int64 = 4
    /// How many short sleeps in a row make traffic dense.
    static let denseSleeps = 2
    /// How often the CPU pressure is read again.
    static let pressureInterval: Int64 = 100_000_000
    /// The share of wall time some thread waited for a CPU above which the machine counts as busy.
    static let pressureLimit = 0.3

    private var shortSleepsInARow = 0
    private var pressureSampledAt: Int64?
    /// The last total read; nil before the first reading and after a failed one, so a rate is
    /// only ever taken between two readings that both succeeded.
    private var pressureTotalMicroseconds: Int64?
    /// Busy until the first two readings say otherwise.
    private(set) var cpuWanted = true

    init(microseconds: Int) {
        nanoseconds = Int64(max(0, microseconds)) * 1000
    }

    /// True when the pressure should be read again at `now` (nanoseconds, monotonic).
    func needsPressureSample(now: Int64) -> Bool {
        guard nanoseconds > 0 else { return false }
        guard let pressureSampledAt else { return true }
        return now - pressureSampledAt >= PollSpin.pressureInterval
    }

    /// Takes a reading of the PSI "some" total (microseconds), nil when it could not be read.
    mutating func samplePressure(totalMicroseconds: Int64?, now: Int64) {
        defer {
            pressureTotalMicroseconds = totalMicroseconds
            pressureSampledAt = now
        }
        guard let total = totalMicroseconds, let previousTotal = pressureTotalMicroseconds,
              let previous = pressureSampledAt, now > previous else {
            cpuWanted = true
            return
        }
        let stalled = Double(total - previousTotal) * 1000
        cpuWanted = stalled / Double(now - previous) >= PollSpin.pressureLimit
    }

    /// Whether to poll for `nanoseconds` before sleeping.
    var shouldSpin: Bool { nanoseconds > 0 && shortSleepsInARow >= PollSpin.denseSleeps && !cpuWanted }

    /// The thread slept `slept` nanoseconds before something was ready.
    mutating func didSleep(nanoseconds slept: Int64) {
        shortSleepsInARow = slept < nanoseconds * PollSpin.denseGapFactor
            ? min(shortSleepsInARow + 1, PollSpin.denseSleeps) : 0
    }

    /// A yield during the spin ran other threads for as long as the spin: they want this CPU,
    /// so no spinning until the next pressure reading.
    mutating func spinGaveWay() {
        cpuWanted = true
    }
}

/// The open `/proc/pressure/cpu`, read by a spinning poll thread.
struct CPUPressureFile: ~Copyable {
    private let fd: Int32

    /// Opens the file only when `needed` (a loop that never spins keeps no descriptor for it).
    init(needed: Bool = true) {
        fd = needed ? open("/proc/pressure/cpu", O_RDONLY | O_CLOEXEC) : -1
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// The "some" total in microseconds, or nil without PSI.
    func someTotalMicroseconds() -> Int64? {
        guard fd >= 0 else { return nil }
        let total = lookout_pressure_some_total(fd)
        return total >= 0 ? total : nil
    }

    /// Whether this kernel reports CPU pressure (without it the spin stays off).
    static var isAvailable: Bool { CPUPressureFile().someTotalMicroseconds() != nil }
}
