import CLookoutSocket
import Glibc
import Testing
@testable import LookoutIO

@Suite("PollSpin: when an idle poll thread polls before sleeping")
struct PollSpinTests {
    private let ms: Int64 = 1_000_000

    /// A policy past its first two pressure readings, with `stalled` microseconds of CPU pressure
    /// in the 100 ms between them.
    private func settled(microseconds: Int = 50, stalled: Int64) -> PollSpin {
        var spin = PollSpin(microseconds: microseconds)
        spin.samplePressure(totalMicroseconds: 1_000, now: 0)
        spin.samplePressure(totalMicroseconds: 1_000 + stalled, now: 100 * ms)
        return spin
    }

    /// `settled`, after two short sleeps of 10 us (dense traffic).
    private func dense(stalled: Int64) -> PollSpin {
        var spin = settled(stalled: stalled)
        spin.didSleep(nanoseconds: 10_000)
        spin.didSleep(nanoseconds: 10_000)
        return spin
    }

    @Test("spins after two short sleeps on a machine where nothing waits for a CPU")
    func spinsWhenDenseAndQuiet() {
        var spin = settled(stalled: 5_000)  // 5 % of the time
        #expect(!spin.cpuWanted)
        #expect(!spin.shouldSpin, "no sleep measured yet")
        spin.didSleep(nanoseconds: 150_000)  // under 4 spins of 50 us
        #expect(!spin.shouldSpin, "one short sleep is not yet dense traffic")
        spin.didSleep(nanoseconds: 150_000)
        #expect(spin.shouldSpin)
    }

    @Test("sleeps at once after a long sleep: an idle or lightly used proxy never polls")
    func longSleepStopsSpinning() {
        var spin = dense(stalled: 0)
        #expect(spin.shouldSpin)
        spin.didSleep(nanoseconds: 200_000)  // exactly 4 spins: not short
        #expect(!spin.shouldSpin)
        // A sparse client: a long gap, then the short wait for the origin's answer, again and again.
        for _ in 0..<3 {
            spin.didSleep(nanoseconds: 10 * ms)
            #expect(!spin.shouldSpin)
            spin.didSleep(nanoseconds: 100_000)
            #expect(!spin.shouldSpin)
        }
        spin.didSleep(nanoseconds: 20_000)
        #expect(spin.shouldSpin)
    }

    @Test("does not spin while threads wait for a CPU (pressure at or above 30 %)")
    func pressureStopsSpinning() {
        var spin = dense(stalled: 30_000)
        #expect(spin.cpuWanted)
        #expect(!spin.shouldSpin)
        // The next reading, 100 ms later, finds the machine quiet again.
        #expect(!spin.needsPressureSample(now: 150 * ms))
        #expect(spin.needsPressureSample(now: 200 * ms))
        spin.samplePressure(totalMicroseconds: 1_000 + 30_000 + 1_000, now: 200 * ms)
        #expect(spin.shouldSpin)
    }

    @Test("a yield that ran other threads for a whole spin turns it off until the next reading")
    func gaveWay() {
        var spin = dense(stalled: 0)
        spin.spinGaveWay()
        #expect(!spin.shouldSpin)
        spin.samplePressure(totalMicroseconds: 1_000, now: 200 * ms)
        #expect(spin.shouldSpin)
    }

    @Test("off before two readings, without PSI, and when configured to 0")
    func offByDefaultWhenUnknown() {
        var first = PollSpin(microseconds: 50)
        first.samplePressure(totalMicroseconds: 0, now: 0)
        first.didSleep(nanoseconds: 1_000)
        first.didSleep(nanoseconds: 1_000)
        #expect(!first.shouldSpin, "one reading gives no rate yet")

        var noPSI = settled(stalled: 0)
        noPSI.samplePressure(totalMicroseconds: nil, now: 200 * ms)
        noPSI.didSleep(nanoseconds: 1_000)
        noPSI.didSleep(nanoseconds: 1_000)
        #expect(!noPSI.shouldSpin)
        // After a failed reading the old total is no baseline: the next good one gives no rate yet.
        noPSI.samplePressure(totalMicroseconds: 1_000, now: 300 * ms)
        #expect(!noPSI.shouldSpin)
        noPSI.samplePressure(totalMicroseconds: 1_000, now: 400 * ms)
        #expect(noPSI.shouldSpin)

        var zero = PollSpin(microseconds: 0)
        #expect(!zero.needsPressureSample(now: 0))
        zero.samplePressure(totalMicroseconds: 0, now: 0)
        zero.samplePressure(totalMicroseconds: 0, now: 100 * ms)
        zero.didSleep(nanoseconds: 0)
        zero.didSleep(nanoseconds: 0)
        #expect(!zero.shouldSpin)
    }

    @Test("the spin primitive returns readiness at once and gives up after its time")
    func spinPrimitive() {
        let epfd = lookout_epoll_create()
        defer { close(epfd) }
        var tokens = [UInt64](repeating: 0, count: 4)
        var masks = [UInt32](repeating: 0, count: 4)
        var gaveWay: Int32 = 0
        let start = lookout_monotonic_ns()
        let none = lookout_epoll_spin(epfd, &tokens, &masks, 4, 200_000, &gaveWay)
        let waited = lookout_monotonic_ns() - start
        #expect(none == 0)
        #expect(waited >= 200_000 || gaveWay == 1, "polled for the whole spin unless other threads took the CPU")
        let wake = lookout_epoll_add_wake(epfd, 42)
        defer { close(wake) }
        lookout_wake(wake)
        let ready = lookout_epoll_spin(epfd, &tokens, &masks, 4, 10 * ms, &gaveWay)
        #expect(ready == 1)
        #expect(tokens[0] == 42)
    }

    @Test("reads the CPU pressure total when the kernel reports it")
    func pressureFile() {
        let file = CPUPressureFile()
        if let total = file.someTotalMicroseconds() {
            #expect(total >= 0)
            #expect(CPUPressureFile.isAvailable)
        } else {
            #expect(!CPUPressureFile.isAvailable)
        }
    }
}
