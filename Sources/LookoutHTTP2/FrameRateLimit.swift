/// A token bucket for frames a peer can send for free and make the other side work for: resets
/// (CVE-2023-44487, rapid reset), PINGs and SETTINGS (CVE-2019-9512/9515, each asks for an ACK),
/// empty DATA (CVE-2019-9518) and PRIORITY (CVE-2019-9513). A burst is allowed; past it, frames
/// may only arrive at `perSecond`.
struct FrameRateLimit {
    let burst: Double
    let perSecond: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant

    init(burst: Int, perSecond: Int) {
        self.burst = Double(burst)
        self.perSecond = Double(perSecond)
        self.tokens = Double(burst)
        self.last = .now
    }

    /// Counts one frame; false when the peer is over its allowance.
    mutating func take() -> Bool {
        let now = ContinuousClock.now
        let elapsed = now - last
        last = now
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        tokens = min(burst, tokens + seconds * perSecond)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
