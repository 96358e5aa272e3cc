import Dispatch
import LookoutAdmin
import LookoutLogQuery
import LookoutMonitors
import Synchronization
import LookoutModel

/// Keeps the recent log records in a ring and streams them to live subscribers (`GET /events`).
/// Records are the log's own JSON, encoded once here. It asks for summaries only; lifecycle events
/// are built (for everyone) only while a subscriber wants them (`&verbose=1`) or the log is
/// verbose anyway, so watching costs nothing until someone watches closely.
public final class LiveMonitor: EventMonitor, @unchecked Sendable {  // `encoder`, `audiences`, `nextSequence` confined to `queue`
    public let queue: DispatchQueue
    let ring: LiveRing
    private var encoder: LogLineEncoder
    /// The subscribers, grouped by the filter text they asked for ("" for none).
    private var audiences: [String: Audience] = [:]
    private var nextSequence: UInt64 = 1
    private weak var composite: CompositeEventMonitor?
    private let alwaysLifecycle: Bool
    private let wantsLifecycle: Atomic<Bool>
    private var verboseSubscribers = 0
    private let heartbeatInterval: Double
    private var heartbeat: DispatchSourceTimer?
    /// Records not delivered because a subscriber's queue was full, over all subscribers.
    private let droppedCount = Atomic<UInt64>(0)
    private let subscriberCount = Atomic<Int>(0)

    /// - Parameters:
    ///   - keepLifecycle: also keep lifecycle events when nobody streams them (`log.verbose`).
    ///   - sharesSummaryRecords: reuse the summary records the JSON-lines log encodes with the same
    ///     options, and offer ours to it (`FinishedExchange.share`).
    ///   - sharedQueue: the log monitor's queue, to run on instead of one of its own: monitors on
    ///     one queue are handed each event in turn (`CompositeEventMonitor`), so this one finds the
    ///     record the log just encoded.
    public init(ringSize: Int, keepLifecycle: Bool = false, revealSecrets: Bool = false, includeHeaders: Bool = false,
                sharesSummaryRecords: Bool = false, sharedQueue: DispatchQueue? = nil, heartbeatInterval: Double = 15) {
        queue = sharedQueue ?? DispatchQueue(label: "lookout.live")
        ring = LiveRing(capacity: ringSize)
        encoder = LogLineEncoder(revealSecrets: revealSecrets, includeHeaders: includeHeaders,
                                 sharesSummaryRecords: sharesSummaryRecords)
        alwaysLifecycle = keepLifecycle
        wantsLifecycle = Atomic(keepLifecycle)
        self.heartbeatInterval = heartbeatInterval
    }

    public var interest: EventInterest { wantsLifecycle.load(ordering: .relaxed) ? .all : .summaries }

    public func didJoin(_ composite: CompositeEventMonitor) {
        self.composite = composite
    }

    /// Live subscribers now, and records lost so far: to subscribers' full queues, or not kept by
    /// the ring for want of memory.
    public var subscriberTotal: Int { subscriberCount.load(ordering: .relaxed) }
    public var droppedRecords: UInt64 { droppedCount.load(ordering: .relaxed) }

    /// Like the log: a finished exchange is its summary record, preceded in verbose mode by the
    /// `request.didFinish` event record; any other event is its own record.
    public func receive(_ event: LookoutEvent) {
        let exchangeID = event.context.requestID
        if let summary = encoder.summaryRecord(of: event) {
            if wantsLifecycle.load(ordering: .relaxed) {
                keep(.lifecycle, exchangeID, encoder.eventRecord(event))
            }
            keep(.exchange, exchangeID, summary)
        } else {
            keep(event.interest.contains(.summaries) ? .notice : .lifecycle, exchangeID, encoder.eventRecord(event))
        }
    }

    private func keep(_ kind: LiveRecord.Kind, _ exchangeID: UInt64?, _ line: [UInt8]) {
        let record = LiveRecord(sequence: nextSequence, kind: kind, exchangeID: exchangeID, line: line)
        nextSequence += 1
        // A record the ring could not keep (no memory to map) still goes to the live subscribers.
        if !ring.append(record) { countDropped() }
        fanOut(record, to: audiences.values)
    }

    /// Offers `record` to each audience: parsed once if some audience filters, each filter run
    /// once for all who share it, framed once if anyone takes it. An audience whose filter
    /// rejects the record costs nothing per member, so a hundred watchers of the failures view
    /// cost one filter run per record while nothing fails.
    private func fanOut(_ record: LiveRecord, to targets: some Collection<Audience>) {
        guard !targets.isEmpty else { return }
        var frame: [UInt8]?
        record.line.withUnsafeBufferPointer { bytes in
            var parsed: LogRecord?
            var parseFailed = false
            for audience in targets {
                if record.kind == .lifecycle && audience.verboseMembers == 0 { continue }
                if let filter = audience.filter {
                    if parsed == nil && !parseFailed {
                        parsed = LogRecord(bytes)
                        parseFailed = parsed == nil
                    }
                    guard let parsed, filter.matches(parsed) else { continue }
                }
                let framed = frame ?? EventSubscriber.frame(record.sequence, record.line)
                frame = framed
                for subscriber in audience.members {
                    subscriber.deliver(record.kind, frame: framed)
                }
            }
        }
    }

    // MARK: - Subscribers (on `queue`)

    /// On `queue`: adds `subscriber` after sending it what it missed (`Last-Event-ID`), in order.
    func register(_ subscriber: EventSubscriber) {
        dispatchPrecondition(condition: .onQueue(queue))
        if let last = subscriber.lastEventID {
            let alone = [Audience(filter: subscriber.filter, first: subscriber)]
            for record in ring.records(after: last) { fanOut(record, to: alone) }
        }
        if let audience = audiences[subscriber.audienceKey] {
            audience.add(subscriber)
        } else {
            audiences[subscriber.audienceKey] = Audience(filter: subscriber.filter, first: subscriber)
        }
        subscriberCount.add(1, ordering: .relaxed)
        if subscriber.verbose {
            verboseSubscribers += 1
            updateLifecycleInterest()
        }
        startHeartbeatIfNeeded()
    }

    /// On `queue`: removes `subscriber` (a no-op for one never added).
    func unregister(_ subscriber: EventSubscriber) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let audience = audiences[subscriber.audienceKey], audience.remove(subscriber) else { return }
        if audience.members.isEmpty { audiences[subscriber.audienceKey] = nil }
        subscriberCount.subtract(1, ordering: .relaxed)
        if subscriber.verbose {
            verboseSubscribers -= 1
            updateLifecycleInterest()
        }
        if audiences.isEmpty {
            heartbeat?.cancel()
            heartbeat = nil
        }
    }

    func countDropped() { droppedCount.add(1, ordering: .relaxed) }

    private func updateLifecycleInterest() {
        let wanted = alwaysLifecycle || verboseSubscribers > 0
        guard wanted != wantsLifecycle.load(ordering: .relaxed) else { return }
        wantsLifecycle.store(wanted, ordering: .relaxed)
        composite?.updateInterest(of: self)
    }

    /// A comment line every `heartbeatInterval` keeps idle streams (and proxies between) open.
    private func startHeartbeatIfNeeded() {
        guard heartbeat == nil, !audiences.isEmpty else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + heartbeatInterval, repeating: heartbeatInterval)
        timer.setEventHandler { [unowned self] in
            for audience in audiences.values {
                for subscriber in audience.members { subscriber.sendHeartbeat() }
            }
        }
        timer.activate()
        heartbeat = timer
    }
}
