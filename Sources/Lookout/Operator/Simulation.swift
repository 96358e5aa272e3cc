import LookoutModel
import LookoutRecordings
import LookoutSync

/// The recordings a session answers from (`simulate`), read at start and again on SIGHUP.
public final class Simulation: Sendable {
    package let mode: SimulateSettings.Mode
    package let settings: SimulateSettings
    private let matcher: Guarded<RecordingMatcher>

    init?(settings: SimulateSettings) throws(RecordingError) {
        guard settings.mode != .off else { return nil }
        self.settings = settings
        mode = settings.mode
        matcher = Guarded(try RecordingMatcher(settings: settings))
    }

    package var current: RecordingMatcher { matcher.withLock { $0 } }

    /// Reads the recordings again; on an error the ones read before stay.
    func reload() throws(RecordingError) -> Int {
        let fresh = try RecordingMatcher(settings: settings)
        matcher.withLock { $0 = fresh }
        return fresh.count
    }
}
