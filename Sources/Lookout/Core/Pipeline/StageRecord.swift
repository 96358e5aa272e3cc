import LookoutModel

/// A stage's part of its exchange's record, given through `StageContext.record`: the stage says
/// what it did, the exchange writes it into the summary. No stage writes the summary itself.
package enum StageRecord {
    /// Passive findings about the exchange (`findings`, the audit), added.
    case findings([AuditFinding])
    /// A recording answered the request (`simulated`).
    case simulated(recording: String, entry: Int)
    /// What a shaping rule applied (`shaping`).
    case shaping(ShapingSummary)
    /// A fault a shaping rule injected, added to `shaping.faults`.
    case fault(String)
    /// The exchange's trace context (`trace`), for the spans and the propagated headers.
    case trace(TraceContext)
    /// A map rule sent the request elsewhere: `url` names where, `mapped_from` what the client asked.
    case mapped(from: String, to: String)
    /// The files a capture rule wrote (`capture`).
    case capture(CaptureSummary)
    /// What the cache did (`cache`).
    case cache(CacheSummary)
    /// The messages read inside the exchange's streams (`messages`), and the file they were
    /// captured to (`capture.messages`).
    case messages(MessagesSummary, capturePath: String?)
    /// A stage held the exchange this long (`held_ms`, added) and, when it changed something,
    /// who did (`modified_by`).
    case held(milliseconds: Double, modifiedBy: String?)
}

extension ExchangeSummary {
    /// Writes a stage's part.
    mutating func apply(_ part: StageRecord) {
        switch part {
        case .findings(let found): findings += found
        case .simulated(let recording, let entry): simulated = (recording, entry)
        case .shaping(let applied): shaping = applied
        case .fault(let name): shaping?.faults.append(name)
        case .trace(let context): trace = context
        case .mapped(let from, let to):
            mappedFrom = from
            url = to
        case .capture(let files): capture = files
        case .cache(let decision): cache = decision
        case .messages(let read, let path):
            messages = read
            if let path {
                var files = capture ?? CaptureSummary()
                files.messages = path
                capture = files
            }
        case .held(let milliseconds, let name):
            if let name, !modifiedBy.contains(name) { modifiedBy.append(name) }
            if milliseconds > 0 { heldMilliseconds = (heldMilliseconds ?? 0) + milliseconds }
        }
    }
}
